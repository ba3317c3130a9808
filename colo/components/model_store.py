"""The model volume: one PVC per stack, mounted read-only by every server.

In a pod whose servers set weightsUri, the weight-sync init containers (colo.components.pair) mount it
read-write and write `/models/<pair>/<role>` before any server starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_kubernetes as k8s

from colo.components.contract import renamed, token
from colo.components.labels import DEFAULT_INSTANCE, colo_labels
from colo.model_volume import MODEL_ROOT


@dataclass(frozen=True)
class ModelStoreArgs:
    """The claim the pairs mount (ColocatedPairArgs.model_claim); a StorageClass of the user's can be named
    by another resource's output."""

    namespace: pulumi.Input[str]
    storage_class: pulumi.Input[str] = "gp3"
    size: pulumi.Input[str] = "500Gi"
    # ReadWriteMany (EFS, say) where pairs on several nodes share it; ReadOnlyMany only without weightsUri.
    access_mode: Literal["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany"] = "ReadWriteOnce"
    labels: Mapping[str, str] = field(default_factory=lambda: colo_labels(DEFAULT_INSTANCE, "model-store"))
    claim_name: str = "models"


class ModelStore(pulumi.ComponentResource):
    claim_name: pulumi.Output[str]
    namespace: pulumi.Output[str]
    mount_path: str = MODEL_ROOT

    def __init__(self, name: str, args: ModelStoreArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(token("ModelStore"), name, None, renamed("ModelStore", opts))
        claim = k8s.core.v1.PersistentVolumeClaim(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.claim_name,
                namespace=args.namespace,
                labels=dict(args.labels),
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
            {"claimName": self.claim_name, "namespace": self.namespace, "mountPath": self.mount_path}
        )
