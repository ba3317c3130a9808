"""Is the cluster a context reaches the stack's? Its API server's URL against the one the stack names.

Kubernetes clusters carry no identity of their own that a client can read before it authenticates; the API
server's URL is what kubectl and the Kubernetes provider key a cluster by (the provider plans a replacement
of every object when the active cluster's server changes). The comparison ignores what does not change the
server: the scheme's and host's case, a default port written out, a trailing slash.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from colo.cluster.kubeconfig import ContextServer, KubeconfigProblem, context_server
from colo.config.cluster_target import CONTEXT_KEY, SERVER_KEY, KubeconfigCluster
from colo.errors import ConfigError, Problem

DEFAULT_PORTS = {"https": 443, "http": 80}


def server_key(url: str) -> tuple[str, str, int | None, str]:
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    return (
        scheme,
        (parts.hostname or "").lower(),
        parts.port or DEFAULT_PORTS.get(scheme),
        parts.path.rstrip("/"),
    )


def same_server(a: str, b: str) -> bool:
    return server_key(a) == server_key(b)


def identity_problems(target: KubeconfigCluster, found: ContextServer) -> list[Problem]:
    """Nothing when the context reaches the stack's API server; else why this is another cluster."""
    if same_server(target.api_server, found.server):
        return []
    return [
        Problem(
            SERVER_KEY,
            f"the stack deploys to {target.api_server}, but context {found.context} ({found.files}) reaches "
            f"{found.server}: another cluster, so nothing was previewed or deployed. Point "
            f"cluster.kubeconfigContext at a context for {target.api_server}, or, if the cluster moved, set "
            f"cluster.apiServer to {found.server}",
        )
    ]


def check_cluster_identity(
    target: KubeconfigCluster, environ: Mapping[str, str] | None = None
) -> ContextServer:
    """The context's server when it is the stack's; a ConfigError naming the key to fix otherwise."""
    try:
        found = context_server(target.kubeconfig, target.context, environ)
    except KubeconfigProblem as problem:
        raise ConfigError([Problem(CONTEXT_KEY, f"{problem}; nothing was previewed or deployed")]) from None
    problems = identity_problems(target, found)
    if problems:
        raise ConfigError(problems)
    return found
