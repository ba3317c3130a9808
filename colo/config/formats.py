"""The formats Kubernetes, EC2/EKS, container registries and the Hugging Face Hub accept, checked in full.

Every pattern is ASCII-only and matched against the whole value (`fullmatch`): `$` would accept a trailing
newline and `\\d` non-ASCII digits, both of which the services refuse later. Each check returns None when
the value is acceptable, else the reason, so validators can say what is wrong and how to write it.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from colo.echo import shown

# Kubernetes apimachinery pkg/util/validation/validation.go: IsDNS1123Label, IsDNS1123Subdomain,
# IsQualifiedName (label keys) and IsValidLabelValue.
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def dns_label(value: str, limit: int = 63) -> str | None:
    if len(value) > limit or not _DNS_LABEL.fullmatch(value):
        return (
            f"'{shown(value)}' is not a DNS label: lower-case letters, digits and '-', starting and ending "
            f"with a letter or digit, at most {limit} characters"
        )
    return None


def dns_subdomain(value: str) -> str | None:
    if len(value) > 253 or not _DNS_SUBDOMAIN.fullmatch(value):
        return (
            f"'{shown(value)}' is not a Kubernetes object name (a DNS subdomain): lower-case letters, digits, "
            "'-' and '.', starting and ending with a letter or digit, at most 253 characters"
        )
    return None


def label_key(value: str) -> str | None:
    prefix, slash, name = value.rpartition("/")
    if (slash and (not prefix or dns_subdomain(prefix))) or len(name) > 63 or not _LABEL_NAME.fullmatch(name):
        return (
            f"'{shown(value)}' is not a Kubernetes label key: an optional DNS-subdomain prefix and '/', then "
            "at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
        )
    return None


def label_value(value: str) -> str | None:
    if value and (len(value) > 63 or not _LABEL_NAME.fullmatch(value)):
        return (
            f"'{shown(value)}' is not a Kubernetes label value: at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return None


# Kubernetes resource quantities as colo writes them (apimachinery pkg/api/resource): whole binary-suffixed
# amounts for memory and storage, whole or decimal cores or millicores for CPU; never zero.
_BYTES = re.compile(r"([0-9]{1,9})(Ki|Mi|Gi|Ti)")
_CPU = re.compile(r"([0-9]{1,6})(\.[0-9]{1,3})?|([0-9]{1,9})m")


def byte_quantity(value: str, what: str) -> str | None:
    match = _BYTES.fullmatch(value)
    if match is None:
        return f"'{shown(value)}' is not a Kubernetes {what} quantity; write it like 16Gi"
    if int(match.group(1)) == 0:
        return f"a {what} quantity of {value} is nothing; give a size above zero"
    return None


def cpu_quantity(value: str) -> str | None:
    if not _CPU.fullmatch(value):
        return f"'{shown(value)}' is not a Kubernetes CPU quantity; write it like 2 or 1500m"
    if float(value.removesuffix("m")) == 0:
        return f"a CPU request of {value} is nothing; give a quantity above zero"
    return None


# EKS CreateCluster: 1-100 characters, `^[0-9A-Za-z][A-Za-z0-9\-_]*$`
# (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html). colo also writes the name
# as a label value, which allows 63 characters and must end with a letter or digit.
_CLUSTER_NAME = re.compile(r"[0-9A-Za-z]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?")


def cluster_name(value: str) -> str | None:
    if not _CLUSTER_NAME.fullmatch(value):
        return (
            f"'{shown(value)}' is not an EKS cluster name colo can label objects with: letters, digits, '-' "
            "and '_', starting and ending with a letter or digit, at most 63 characters"
        )
    return None


# A Kubernetes API server as a kubeconfig names it (clusters[].cluster.server): an http(s) URL with a host,
# a port where it is not the scheme's default, and a path where a proxy serves the API below one.
_API_SERVER_LIMIT = 2048


def api_server_url(value: str) -> str | None:
    fix = "write the server's URL as the kubeconfig holds it, e.g. https://127.0.0.1:6443"
    if len(value) > _API_SERVER_LIMIT or not value.isascii() or any(c.isspace() for c in value):
        return f"'{shown(value)}' is not an API server URL: {fix}"
    parsed = urlsplit(value)
    try:
        port_ok = parsed.port is None or parsed.port > 0
    except ValueError:
        port_ok = False
    if parsed.scheme not in ("https", "http") or not parsed.hostname or not port_ok:
        return f"'{shown(value)}' is not an API server URL: {fix}"
    if parsed.query or parsed.fragment or parsed.username or parsed.password:
        return (
            f"'{shown(value)}' holds a query, fragment or credentials, which no API server URL carries; {fix}"
        )
    return None


# EC2 resource IDs: `subnet-` and 8 or 17 hexadecimal digits
# (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html).
_SUBNET_ID = re.compile(r"subnet-([0-9a-f]{8}|[0-9a-f]{17})")
# EC2 instance type names: family and size, e.g. g6e.12xlarge, u-6tb1.metal.
_INSTANCE_TYPE = re.compile(r"[a-z][a-z0-9-]{0,30}\.[a-z0-9-]{1,30}")


def subnet_id(value: str) -> str | None:
    if not _SUBNET_ID.fullmatch(value):
        return f"'{shown(value)}' is not an EC2 subnet ID (subnet- and 8 or 17 hexadecimal digits)"
    return None


def instance_type_name(value: str) -> str | None:
    if not _INSTANCE_TYPE.fullmatch(value):
        return f"'{shown(value)}' is not an EC2 instance type name; write it like g6e.xlarge"
    return None


# `sg-` and 8 or 17 hexadecimal digits, as subnet IDs (the same EC2 resource-ID page).
_SECURITY_GROUP_ID = re.compile(r"sg-([0-9a-f]{8}|[0-9a-f]{17})")
# IAM role names: 1-64 of letters, digits and +=,.@_- (IAM User Guide, "IAM object quotas": role names).
_IAM_ROLE_NAME = re.compile(r"[\w+=,.@-]{1,64}", re.ASCII)
# The version half of a Karpenter AMI alias (`al2023@v20251120`, `bottlerocket@v1.26.2`, `...@latest`):
# karpenter-provider-aws v1.14.1 EC2NodeClass amiSelectorTerms[].alias, at most 30 characters in all.
_AMI_ALIAS_VERSION = re.compile(r"latest|v?[0-9]{1,8}(\.[0-9]{1,4}){0,3}")


def security_group_id(value: str) -> str | None:
    if not _SECURITY_GROUP_ID.fullmatch(value):
        return f"'{shown(value)}' is not an EC2 security group ID (sg- and 8 or 17 hexadecimal digits)"
    return None


def iam_role_name(value: str) -> str | None:
    if not _IAM_ROLE_NAME.fullmatch(value):
        return f"'{shown(value)}' is not an IAM role name (1 to 64 letters, digits and +=,.@_-; the name, not the ARN)"
    return None


def ami_alias_version(value: str) -> str | None:
    if not _AMI_ALIAS_VERSION.fullmatch(value):
        return f"'{shown(value)}' is not an AMI release for a Karpenter alias; write latest, or one like v20251120"
    return None


# A CUDA compute capability as `nvidia-smi --query-gpu=compute_cap --format=csv` prints it: major.minor.
_COMPUTE_CAPABILITY = re.compile(r"[0-9]{1,2}\.[0-9]")


def compute_capability(value: str) -> str | None:
    if not _COMPUTE_CAPABILITY.fullmatch(value):
        return (
            f"'{shown(value)}' is not a compute capability as `nvidia-smi --query-gpu=compute_cap --format=csv` "
            "prints it; write major.minor, like 8.0, 8.9, 9.0 or 12.0"
        )
    return None


# Hugging Face Hub repository ids: `name` or `namespace/name`, letters, digits, '-', '_' and '.', no '--' or
# '..', not starting or ending with '-' or '.', at most 96 characters (huggingface_hub
# utils/_validators.py::validate_repo_id).
_REPO_PART = r"[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?"
_REPO_ID = re.compile(rf"({_REPO_PART}/)?{_REPO_PART}")


def model_id(value: str) -> str | None:
    if len(value) > 96 or not _REPO_ID.fullmatch(value) or "--" in value or ".." in value:
        return (
            f"'{shown(value)}' is not a Hugging Face model id: 'organisation/name' of letters, digits, '-', "
            "'_' and '.', at most 96 characters"
        )
    return None


# A revision the Hub resolves: a full commit id, or a branch or tag name as git allows one (git-check-ref-format:
# no control characters, spaces or ~^:?*[\\, no '..' or '@{', no part starting with '.' or ending with '.lock', no '/'
# at either end or twice in a row), at most 255 characters.
_COMMIT = re.compile(r"[0-9a-f]{40}")
_REF_BAD = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|^/|/$|^@$|\.lock(/|$)|(^|/)\.")


def hub_revision(value: str) -> str | None:
    if _COMMIT.fullmatch(value):
        return None
    if len(value) > 255 or not value or _REF_BAD.search(value) or value.endswith("."):
        return (
            f"'{shown(value)}' is not a revision the Hub resolves: a branch or tag name (as git allows one) or a "
            "40-character commit id"
        )
    return None


# Container image references, after the grammar of github.com/distribution/reference (reference.go):
# [domain[:port]/]path[:tag][@algorithm:digest], path components lower-case, tags at most 128 characters.
_DOMAIN = r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]{1,5})?)"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(
    rf"(?P<name>(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(?:@(?P<digest>sha256:[0-9a-f]{64}))?"
)
OFFICIAL_VLLM = {
    "vllm/vllm-openai",
    "docker.io/vllm/vllm-openai",
    "index.docker.io/vllm/vllm-openai",
    "registry-1.docker.io/vllm/vllm-openai",
}


def image_reference(value: str, example_tag: str = "v0.11.0") -> tuple[str, str | None, str | None] | str:
    """(name, tag, digest) of a pinned image reference, or why it is refused; an unpinned one is told to pin
    a tag such as `example_tag` (a vLLM server's: its own release)."""
    if len(value) > 512:
        return f"'{shown(value)}' is longer than any image reference ({len(value)} characters)"
    registry = value.split("/", 1)[0] if "/" in value else ""
    if "@" in registry or "@" in value.rsplit("@", 1)[0]:
        return (
            f"'{shown(value)}' carries credentials; registry credentials belong in an image pull secret, "
            "never in the image reference"
        )
    match = _IMAGE.fullmatch(value)
    if match is None:
        if "@sha256:" in value:
            return f"'{shown(value)}' has no full digest: write @sha256: and all 64 hexadecimal digits"
        return (
            f"'{shown(value)}' is not an image reference: [registry/]repository:tag or @sha256:<64 hex digits>, "
            "repository in lower case, tag not empty"
        )
    name, tag, digest = match.group("name"), match.group("tag"), match.group("digest")
    if len(name) > 255:
        return f"'{shown(value)}' has a repository name longer than 255 characters"
    if digest is None and (tag is None or tag == "latest"):
        return (
            f"image '{shown(value)}' is not pinned; give an explicit tag such as :{example_tag} or a digest"
        )
    return name, tag, digest
