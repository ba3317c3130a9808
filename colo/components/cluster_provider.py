"""The stack's Kubernetes provider: the cluster the stack names (colo.config.cluster_target), never the
kubeconfig's current context. Every Kubernetes object colo declares is given this provider through its
component, so the children inherit it.

- A managed stack reaches the EKS cluster it manages nodes in: its endpoint and CA from EKS (an invoke the
  AWS provider answers with the stack's aws:region and aws:profile) and a token from `aws eks get-token`
  with the same region and profile.
- A stack on existing nodes goes through its kubeconfig context (and kubeconfig file, where it names one).
- Where the stack renders (kubernetes:renderYamlToDirectory), the provider writes manifests there and
  reaches no cluster at all.

Stacks deployed before colo named its provider used the engine's default Kubernetes provider. The provider
carries an alias to that one (`default_<plugin version>`), so the engine takes it for the same provider and
keeps every object it manages instead of replacing them for the new provider reference.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from colo.cluster.kubeconfig import eks_kubeconfig
from colo.config.cluster_target import ClusterTarget, EksCluster

NAME = "cluster"
RENDER_KEY = "renderYamlToDirectory"  # in the `kubernetes` namespace of the stack config


def default_provider_name() -> str:
    """The engine's name for the default Kubernetes provider of the SDK installed: default_4_34_2."""
    return "default_" + version("pulumi-kubernetes").replace(".", "_").replace("-", "_").replace("+", "_")


def render_directory() -> str | None:
    """The stack's kubernetes:renderYamlToDirectory: where manifests are written instead of applied."""
    return pulumi.Config("kubernetes").get(RENDER_KEY)


def _eks_kubeconfig(target: EksCluster) -> pulumi.Output[str]:
    cluster = aws.eks.get_cluster_output(name=target.name)

    def written(found: list[Any]) -> str:
        endpoint, authorities = found
        # The SDK's result types are dicts; `data` is the base64 CA bundle EKS returns.
        return json.dumps(
            eks_kubeconfig(target.name, endpoint, authorities[0]["data"], target.region, target.profile)
        )

    return pulumi.Output.all(cluster.endpoint, cluster.certificate_authorities).apply(written)


def kubernetes_provider(
    target: ClusterTarget, render_dir: str | None, opts: pulumi.ResourceOptions | None = None
) -> k8s.Provider:
    """The provider every Kubernetes object of the stack is declared with."""
    migrated = pulumi.ResourceOptions(aliases=[pulumi.Alias(name=default_provider_name())])
    options = pulumi.ResourceOptions.merge(migrated, opts)
    if render_dir is not None:
        return k8s.Provider(NAME, render_yaml_to_directory=render_dir, opts=options)
    if isinstance(target, EksCluster):
        return k8s.Provider(NAME, kubeconfig=_eks_kubeconfig(target), opts=options)
    return k8s.Provider(NAME, context=target.context, kubeconfig=target.kubeconfig, opts=options)
