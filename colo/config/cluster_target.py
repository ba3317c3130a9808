"""The cluster a stack deploys to, as the stack names it: never the kubeconfig's current context.

A managed stack (nodePool.mode managed) reaches the EKS cluster whose node group it manages, by that
cluster's name in the stack's AWS region and profile; so does a stack whose nodes Karpenter or EKS Auto Mode
launches (karpenter, auto), whose NodePool goes to the EKS cluster the stack names. A stack on existing nodes names a kubeconfig context
and the API server that context must reach; colo deploys through that context only, and refuses one that
reaches another server (colo.cluster.identity). Pure: reading the kubeconfig is colo.cluster's job.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.config.schema import KARPENTER_MODES, StackConfig
from colo.errors import ConfigError, Problem

CONTEXT_KEY = "colo:cluster.kubeconfigContext"
SERVER_KEY = "colo:cluster.apiServer"
KUBECONFIG_KEY = "colo:cluster.kubeconfig"


@dataclass(frozen=True)
class EksCluster:
    """An EKS cluster colo manages nodes in, reached with the stack's AWS settings (as the AWS provider is)."""

    name: str
    region: str | None  # aws:region; None: the AWS environment's region
    profile: str | None  # aws:profile; None: the AWS environment's credentials


@dataclass(frozen=True)
class KubeconfigCluster:
    """A cluster reached through a named kubeconfig context, which must point at `api_server`."""

    context: str
    api_server: str
    kubeconfig: str | None  # a file; None: KUBECONFIG, then ~/.kube/config, as kubectl


ClusterTarget = EksCluster | KubeconfigCluster

# The modes whose stack names an EKS cluster (cluster.name, required there) and reaches it through EKS.
EKS_MODES = frozenset({"managed", *KARPENTER_MODES})


def cluster_target(config: StackConfig) -> ClusterTarget:
    """The stack's cluster; a ConfigError naming each missing or unread key otherwise."""
    cluster = config.cluster
    mode = config.node_pool.mode
    if mode in EKS_MODES:
        unread = [
            key
            for key, value in (
                (CONTEXT_KEY, cluster.kubeconfig_context),
                (KUBECONFIG_KEY, cluster.kubeconfig),
                (SERVER_KEY, cluster.api_server),
            )
            if value is not None
        ]
        if unread:
            raise ConfigError(
                [
                    Problem(
                        key,
                        f"not read with nodePool.mode: {mode}: colo reaches the EKS cluster the stack's nodes "
                        f"join ({cluster.name}) by its endpoint, with the stack's aws:region and aws:profile; "
                        "remove it",
                    )
                    for key in unread
                ]
            )
        return EksCluster(cluster.name, config.aws_region, config.aws_profile)
    problems = []
    if cluster.kubeconfig_context is None:
        problems.append(
            Problem(
                CONTEXT_KEY,
                "required with nodePool.mode: existing: the kubeconfig context of the cluster this stack "
                "deploys to (pulumi config set --path cluster.kubeconfigContext <context>); colo never "
                "deploys to whichever context is current",
            )
        )
    if cluster.api_server is None:
        problems.append(
            Problem(
                SERVER_KEY,
                "required with nodePool.mode: existing: the URL of the API server the context must reach, "
                "as `kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}'` prints it "
                "for that context, so a context that points elsewhere on another machine is refused",
            )
        )
    if problems:
        raise ConfigError(problems)
    assert cluster.kubeconfig_context is not None and cluster.api_server is not None
    return KubeconfigCluster(cluster.kubeconfig_context, cluster.api_server, cluster.kubeconfig)
