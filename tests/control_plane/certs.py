"""The certificates and keys a loopback control plane needs, generated fresh for each test session.

One CA signs the API server's serving certificate and every client certificate (the administrator the
tests act as, and the API server's own client identity towards kwok's kubelet endpoint); a separate RSA key
pair signs ServiceAccount tokens.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_FOR = datetime.timedelta(days=1)  # a session lasts minutes; nothing outlives it


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class Certificates:
    ca: Pair
    apiserver: Pair  # serving certificate for 127.0.0.1
    admin: Pair  # client, group system:masters
    kubelet_client: Pair  # the API server's client identity when it reads logs from kwok
    service_account_key: Path  # private, signs tokens
    service_account_public: Path  # verifies them


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _write_key(key: rsa.RSAPrivateKey, path: Path) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)
    return path


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(parts)


def _builder(subject: x509.Name, issuer: x509.Name, key: rsa.RSAPrivateKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALID_FOR)
    )


def _write_cert(cert: x509.Certificate, path: Path) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def generate(directory: Path) -> Certificates:
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_name = _name("colo-test-ca")
    ca_cert = (
        _builder(ca_name, ca_name, ca_key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )

    def issue(stem: str, subject: x509.Name, server: bool) -> Pair:
        key = _key()
        builder = _builder(subject, ca_name, key).add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                        x509.DNSName("localhost"),
                        x509.DNSName("kubernetes.default.svc"),
                    ]
                ),
                critical=False,
            )
        cert = builder.sign(ca_key, hashes.SHA256())
        return Pair(_write_cert(cert, directory / f"{stem}.crt"), _write_key(key, directory / f"{stem}.key"))

    service_account = _key()
    public = directory / "service-account.pub"
    public.write_bytes(
        service_account.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return Certificates(
        ca=Pair(_write_cert(ca_cert, directory / "ca.crt"), _write_key(ca_key, directory / "ca.key")),
        apiserver=issue("apiserver", _name("kube-apiserver"), server=True),
        admin=issue("admin", _name("colo-test-admin", "system:masters"), server=False),
        kubelet_client=issue(
            "kubelet-client", _name("kube-apiserver-kubelet-client", "system:masters"), server=False
        ),
        service_account_key=_write_key(service_account, directory / "service-account.key"),
        service_account_public=public,
    )
