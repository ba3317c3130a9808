"""Where the API server's traffic towards nodes, pods and Services goes: an HTTP CONNECT proxy on a unix socket.

The API server sends every "cluster" connection (reading a pod's log from its node's kubelet, the pod and
service proxies) through the proxy its egress selector names (apiserver.k8s.io EgressSelectorConfiguration).
This one forwards a tunnel only to a loopback address (kwok, which plays every node's kubelet there); a tunnel
to a pod answers one HTTP request itself from the text the tests gave for that port (a vLLM server's
/metrics), or is refused. So pods can carry ordinary pod IPs, which Endpoints accept, and still no byte ever
leaves this machine's loopback.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import socketserver
import threading
from pathlib import Path

CHUNK = 65536


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


def _read_head(connection: socket.socket) -> bytes:
    head = b""
    while b"\r\n\r\n" not in head:
        data = connection.recv(4096)
        if not data:
            break
        head += data
    return head


class _Tunnel(socketserver.BaseRequestHandler):
    server: EgressProxy

    def handle(self) -> None:
        client: socket.socket = self.request
        head = _read_head(client)
        first = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        if len(first) < 2 or first[0] != "CONNECT":
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            return
        host, _, port_text = first[1].rpartition(":")
        host, port = host.strip("[]"), int(port_text)
        self.server.targets.append(f"{host}:{port}")
        if ipaddress.ip_address(host).is_loopback:
            self._forward(client, host, port)
        elif port in self.server.answers:
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            _read_head(client)
            body = self.server.answers[port].encode()
            client.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
        else:
            client.sendall(b"HTTP/1.1 403 Forbidden\r\n\r\n")

    @staticmethod
    def _forward(client: socket.socket, host: str, port: int) -> None:
        try:
            upstream = socket.create_connection((host, port), timeout=10)
        except OSError:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
            return
        upstream.settimeout(None)
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
        back.start()
        _pump(client, upstream)
        back.join(timeout=10)
        upstream.close()


class EgressProxy(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: Path, answers: dict[int, str]) -> None:
        self.answers = answers  # port -> the body one HTTP request to a pod on that port gets
        self.targets: list[str] = []  # every host:port asked for, in order
        super().__init__(str(path), _Tunnel)


def egress_config(socket_path: Path) -> dict[str, object]:
    return {
        "apiVersion": "apiserver.k8s.io/v1beta1",
        "kind": "EgressSelectorConfiguration",
        "egressSelections": [
            {
                "name": "cluster",
                "connection": {
                    "proxyProtocol": "HTTPConnect",
                    "transport": {"uds": {"udsName": str(socket_path)}},
                },
            }
        ],
    }
