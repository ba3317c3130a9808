"""Kubeconfigs as colo reads and writes them: the server a named context reaches, and an EKS cluster's.

A context is looked up the way kubectl looks it up: in the file the stack names, else in every file of
KUBECONFIG (the first file that defines a name wins), else in ~/.kube/config; the `kubernetes` client's own
merger does the merging. An EKS cluster's kubeconfig authenticates with `aws eks get-token`, run with the
stack's region and profile, as `aws eks update-kubeconfig` writes it; it is handed over as data, never
written to a file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# client-go's clientcmd.RecommendedHomeFile, and the separator of KUBECONFIG's list (os.pathsep, as client-go).
DEFAULT_KUBECONFIG = "~/.kube/config"
KUBECONFIG_ENV = "KUBECONFIG"
# What `aws eks get-token` prints (aws-cli v2 awscli/customizations/eks/get_token.py).
EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"


class KubeconfigProblem(Exception):
    """The kubeconfig cannot be read, or has no such context."""


@dataclass(frozen=True)
class ContextServer:
    context: str
    server: str  # clusters[].cluster.server of the context's cluster
    files: str  # where it was found, for messages


def kubeconfig_files(kubeconfig: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The file list kubectl would read: the one given, else KUBECONFIG's, else ~/.kube/config."""
    environ = os.environ if environ is None else environ
    return kubeconfig or environ.get(KUBECONFIG_ENV) or DEFAULT_KUBECONFIG


def _plain(node: Any) -> Any:
    """A value of the client's merged kubeconfig without its ConfigNode wrappers."""
    return getattr(node, "value", node)


def _named(items: Any, name: str) -> dict[str, Any] | None:
    for item in _plain(items) or []:
        entry = _plain(item)
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    return None


def context_server(
    kubeconfig: str | None, context: str, environ: Mapping[str, str] | None = None
) -> ContextServer:
    """The API server `context` reaches, read as kubectl reads it; KubeconfigProblem where it cannot be."""
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import KubeConfigMerger

    files = kubeconfig_files(kubeconfig, environ)
    try:
        merged = KubeConfigMerger(files).config
    except (ConfigException, OSError, ValueError) as exc:
        raise KubeconfigProblem(f"{files} cannot be read as a kubeconfig: {exc}") from None
    if merged is None:
        raise KubeconfigProblem(f"no kubeconfig file at {files}")
    config = _plain(merged)
    entry = _named(config.get("contexts"), context)
    if entry is None:
        known = sorted(str(_plain(c).get("name")) for c in _plain(config.get("contexts")) or [])
        listed = ", ".join(known) if known else "none"
        raise KubeconfigProblem(f"{files} has no context named {context} (its contexts: {listed})")
    cluster_name = (_plain(entry.get("context")) or {}).get("cluster")
    cluster = _named(config.get("clusters"), str(cluster_name))
    server = (_plain(cluster.get("cluster")) or {}).get("server") if cluster else None
    if not isinstance(server, str) or not server:
        raise KubeconfigProblem(
            f"context {context} in {files} names cluster {cluster_name}, which has no server"
        )
    return ContextServer(context, server, files)


def eks_kubeconfig(
    name: str, endpoint: str, certificate_authority: str, region: str | None, profile: str | None
) -> dict[str, Any]:
    """A kubeconfig for EKS cluster `name` (its endpoint and base64 CA), authenticating as the stack's AWS
    identity: `aws eks get-token` with its region and profile."""
    command = ["eks", "get-token", "--cluster-name", name, "--output", "json"]
    if region:
        command += ["--region", region]
    if profile:
        command += ["--profile", profile]
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {"server": endpoint, "certificate-authority-data": certificate_authority},
            }
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "users": [
            {
                "name": name,
                "user": {
                    "exec": {
                        "apiVersion": EXEC_API_VERSION,
                        "command": "aws",
                        "args": command,
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
    }
