"""The namespace colo's servers run in, with Pod Security admission labels."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from colo.components.pod_security import PodSecurityLevel, pod_security_labels


@dataclass(frozen=True)
class NamespaceArgs:
    name: str
    labels: dict[str, str]
    pod_security: PodSecurityLevel
    kubernetes_version: str  # the policy version to enforce, pinned so an upgrade does not change it


class Namespace(pulumi.ComponentResource):
    name: pulumi.Output[str]

    def __init__(self, name: str, args: NamespaceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("colo:namespace:Namespace", name, None, opts)
        namespace = k8s.core.v1.Namespace(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.name,
                labels={**args.labels, **pod_security_labels(args.pod_security, args.kubernetes_version)},
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.name = namespace.metadata.name
        self.register_outputs({"name": self.name})
