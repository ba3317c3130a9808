"""What the `kubernetes` client needs to reach a stack's cluster, from the same settings as colo's provider.

A stack on existing nodes: its kubeconfig file (kubectl's files where it names none) and its context. A
managed stack: the kubeconfig of its EKS cluster, made from EKS's own answer (endpoint, CA) with the stack's
region and profile, held in memory only: the client reads a kubeconfig given as data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from colo.cluster.kubeconfig import eks_kubeconfig
from colo.config.cluster_target import ClusterTarget, EksCluster

# Makes a boto3 client: (service, region, profile) -> client, as colo.aws.clients.client does.
ClientFactory = Callable[[str, str | None, str | None], Any]


@dataclass(frozen=True)
class ClusterAccess:
    kubeconfig: str | dict[str, Any] | None  # a file, or the kubeconfig itself; None: kubectl's files
    context: str | None  # None: the kubeconfig's current context


def eks_access(target: EksCluster, clients: ClientFactory) -> ClusterAccess:
    """The EKS cluster's kubeconfig, as EKS describes the cluster to the stack's AWS identity."""
    described = clients("eks", target.region, target.profile).describe_cluster(name=target.name)["cluster"]
    kubeconfig = eks_kubeconfig(
        target.name,
        described["endpoint"],
        described["certificateAuthority"]["data"],
        target.region,
        target.profile,
    )
    return ClusterAccess(kubeconfig, target.name)


def cluster_access(target: ClusterTarget, clients: ClientFactory) -> ClusterAccess:
    if isinstance(target, EksCluster):
        return eks_access(target, clients)
    return ClusterAccess(target.kubeconfig, target.context)
