"""NetworkPolicies: a pair's admits ingress only to its servers' ports, only from the sources the plan
names; the DCGM exporter's only from where Prometheus runs; the device plugin's none (the plugin talks to
kubelet over a socket on the node).

vLLM's API has no authentication of its own unless an API key is set, so the servers are otherwise open
to every pod of the cluster. Traffic from the node itself (kubelet probes) and within the pod (the start
gate) is never subject to a NetworkPolicy (kubernetes.io/docs/concepts/services-networking/network-policies/).
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from colo.plan.kubernetes_spec import IngressPeer

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set on every namespace by the API server (1.22+)


def policy_peer(peer: IngressPeer, own_namespace: str) -> k8s.networking.v1.NetworkPolicyPeerArgs:
    pods = k8s.meta.v1.LabelSelectorArgs(match_labels=peer.pod_labels or None)
    if peer.namespace == own_namespace:
        return k8s.networking.v1.NetworkPolicyPeerArgs(pod_selector=pods)  # no namespaceSelector: its own
    namespaces = k8s.meta.v1.LabelSelectorArgs(
        match_labels={NAMESPACE_NAME_LABEL: peer.namespace} if peer.namespace is not None else None
    )
    return k8s.networking.v1.NetworkPolicyPeerArgs(
        namespace_selector=namespaces, pod_selector=pods if peer.pod_labels else None
    )


def ingress_policy(
    name: str,
    *,
    namespace: pulumi.Input[str],
    labels: dict[str, str],
    selector: dict[str, str],
    ports: list[int],
    sources: Sequence[pulumi.Input[k8s.networking.v1.NetworkPolicyPeerArgs]],
    opts: pulumi.ResourceOptions,
) -> k8s.networking.v1.NetworkPolicy:
    """Selects the pods; with Ingress in policyTypes, anything the one rule does not admit is refused. With
    no sources there is no rule at all: a rule with an empty `from` would admit every source."""
    rule = k8s.networking.v1.NetworkPolicyIngressRuleArgs(
        from_=list(sources),
        ports=[k8s.networking.v1.NetworkPolicyPortArgs(port=port, protocol="TCP") for port in ports],
    )
    return k8s.networking.v1.NetworkPolicy(
        name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace=namespace, labels=labels),
        spec=k8s.networking.v1.NetworkPolicySpecArgs(
            pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=selector),
            policy_types=["Ingress"],
            ingress=[rule] if sources else None,
        ),
        opts=opts,
    )


def deny_all_ingress(
    name: str,
    *,
    namespace: pulumi.Input[str],
    labels: dict[str, str],
    selector: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> k8s.networking.v1.NetworkPolicy:
    """The selected pods, with Ingress in policyTypes and no rule: nothing may connect to them."""
    return k8s.networking.v1.NetworkPolicy(
        name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace=namespace, labels=labels),
        spec=k8s.networking.v1.NetworkPolicySpecArgs(
            pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=selector), policy_types=["Ingress"]
        ),
        opts=opts,
    )
