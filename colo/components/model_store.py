"""The model volume: one PVC per stack, mounted read-only by every server.

In a pod whose servers set weightsUri, the weight-sync init containers (colo.components.pair) mount it
read-write and write `/models/<pair>/<role>` before any server starts.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from colo.plan.model_volume import MODEL_ROOT


@dataclass(frozen=True)
class ModelStoreArgs:
    namespace: pulumi.Input[str]
    storage_class: str
    size: str
    access_mode: str
    labels: dict[str, str]


class ModelStore(pulumi.ComponentResource):
    claim_name: pulumi.Output[str]
    namespace: pulumi.Output[str]
    mount_path: str = MODEL_ROOT

    def __init__(self, name: str, args: ModelStoreArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("colo:model_store:ModelStore", name, None, opts)
        claim = k8s.core.v1.PersistentVolumeClaim(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="models",
                namespace=args.namespace,
                labels=args.labels,
                # EBS-style classes bind on first consumer; waiting for Bound here would wait forever,
                # because the consumer (the pair's pod) is declared after the claim.
                annotations={"pulumi.com/skipAwait": "true"},
            ),
            spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                storage_class_name=args.storage_class,
                access_modes=[args.access_mode],
                resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests={"storage": args.size}),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.claim_name = claim.metadata.name
        self.namespace = claim.metadata.namespace
        self.register_outputs(
            {"claim_name": self.claim_name, "namespace": self.namespace, "mount_path": self.mount_path}
        )
