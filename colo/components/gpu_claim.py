"""A DRA ResourceClaimTemplate: each pair's pod gets one claim, shared by all its servers (same GPU).

NVIDIA's DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu, which publishes the `gpu.nvidia.com` device
class) is a cluster prerequisite, installed with its GPU kubelet plugin enabled on nodes that run no
classic device plugin; see docs/kubernetes.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

DEVICE_CLASS = "gpu.nvidia.com"
CLAIM_NAME = "gpu"  # the name containers use in resources.claims


@dataclass(frozen=True)
class GpuClaimTemplateArgs:
    namespace: pulumi.Input[str]
    labels: dict[str, str]
    template_name: str = "single-gpu"  # what each pod's resourceClaimTemplateName names


class GpuClaimTemplate(pulumi.ComponentResource):
    template_name: pulumi.Output[str]

    def __init__(
        self, name: str, args: GpuClaimTemplateArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("colo:gpu_claim:GpuClaimTemplate", name, None, opts)
        template = k8s.resource.v1.ResourceClaimTemplate(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.template_name, namespace=args.namespace, labels=args.labels
            ),
            spec=k8s.resource.v1.ResourceClaimTemplateSpecArgs(
                spec=k8s.resource.v1.ResourceClaimSpecArgs(
                    devices=k8s.resource.v1.DeviceClaimArgs(
                        requests=[
                            k8s.resource.v1.DeviceRequestArgs(
                                name="gpu",
                                exactly=k8s.resource.v1.ExactDeviceRequestArgs(
                                    device_class_name=DEVICE_CLASS
                                ),
                            )
                        ]
                    )
                )
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.template_name = template.metadata.name
        self.register_outputs({"template_name": self.template_name})
