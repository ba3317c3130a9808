"""Pod security in one place: the UID colo's containers run as, the restricted security contexts, and the
Pod Security admission labels of colo's namespaces.

The official vllm/vllm-openai image declares no USER and runs as root. Nothing in vLLM needs root: it
needs a writable HOME and cache (an emptyDir here) and read access to the image's Python tree, so colo
runs it as an unprivileged UID with a read-only root filesystem. That meets the `restricted` Pod Security
level. An image that insists on root would need `runAsNonRoot: false` and a `baseline` namespace. The
weight-sync image's Dockerfile creates and runs as the same UID (tests/aws/test_sync_image.py compares).

NVIDIA's device plugin is the one exception: it writes its socket into the root-owned kubelet directory,
so it runs as root, with everything else restricted, in a `privileged` namespace of its own.
"""

from __future__ import annotations

from typing import Literal

import pulumi_kubernetes as k8s

RUN_AS = 10001  # no meaning inside the image; above 10000 so it maps to no host account
SECCOMP_PROFILE = "RuntimeDefault"
PodSecurityLevel = Literal["restricted", "baseline", "privileged"]
SERVERS_LEVEL: PodSecurityLevel = "restricted"  # no pairing method needs privilege in the servers' pods
DEVICE_PLUGIN_LEVEL: PodSecurityLevel = "privileged"  # hostPath for the kubelet's device-plugin socket


def _seccomp() -> k8s.core.v1.SeccompProfileArgs:
    return k8s.core.v1.SeccompProfileArgs(type=SECCOMP_PROFILE)


def pod_security_context(*, as_root: bool = False) -> k8s.core.v1.PodSecurityContextArgs:
    """Colo's UID for every container of the pod, or (`as_root`) the seccomp profile alone."""
    if as_root:
        return k8s.core.v1.PodSecurityContextArgs(seccomp_profile=_seccomp())
    return k8s.core.v1.PodSecurityContextArgs(
        run_as_non_root=True,
        run_as_user=RUN_AS,
        run_as_group=RUN_AS,
        fs_group=RUN_AS,
        seccomp_profile=_seccomp(),
    )


def container_security_context(*, as_root: bool = False) -> k8s.core.v1.SecurityContextArgs:
    """No privilege escalation, no capabilities, a read-only root filesystem; non-root unless `as_root`."""
    return k8s.core.v1.SecurityContextArgs(
        allow_privilege_escalation=False,
        capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"]),
        read_only_root_filesystem=True,
        run_as_non_root=None if as_root else True,
        seccomp_profile=_seccomp(),
    )


def pod_security_labels(level: PodSecurityLevel, kubernetes_version: str) -> dict[str, str]:
    """Enforce, audit and warn at `level`, pinned to the cluster's policy version so an upgrade keeps it."""
    labels: dict[str, str] = {}
    for mode in ("enforce", "audit", "warn"):
        labels[f"pod-security.kubernetes.io/{mode}"] = level
        labels[f"pod-security.kubernetes.io/{mode}-version"] = f"v{kubernetes_version}"
    return labels
