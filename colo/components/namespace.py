"""The namespace colo's servers run in, with Pod Security admission labels."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from colo.components.pod_security import PodSecurityLevel, pod_security_labels


def servers_namespace(
    name: str,
    *,
    namespace: str,
    labels: dict[str, str],
    pod_security: PodSecurityLevel,
    kubernetes_version: str,  # the policy version to enforce, pinned so an upgrade does not change it
    opts: pulumi.ResourceOptions,
) -> k8s.core.v1.Namespace:
    return k8s.core.v1.Namespace(
        name,
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=namespace,
            labels={**labels, **pod_security_labels(pod_security, kubernetes_version)},
        ),
        opts=opts,
    )
