"""A DRA ResourceClaimTemplate: each pair's pod gets one claim, shared by all its servers (same GPU).

NVIDIA's DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu, which publishes the `gpu.nvidia.com` device
class) is a cluster prerequisite, installed with its GPU kubelet plugin enabled on nodes that run no
classic device plugin; see docs/kubernetes.md.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

DEVICE_CLASS = "gpu.nvidia.com"
CLAIM_NAME = "gpu"  # the name containers use in resources.claims
TEMPLATE_NAME = "single-gpu"  # what each pod's resourceClaimTemplateName names, where a stack shares one


def gpu_claim_template(
    name: str,
    *,
    namespace: pulumi.Input[str],
    labels: dict[str, str],
    template_name: str = TEMPLATE_NAME,
    opts: pulumi.ResourceOptions,
) -> k8s.resource.v1.ResourceClaimTemplate:
    return k8s.resource.v1.ResourceClaimTemplate(
        name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=template_name, namespace=namespace, labels=labels),
        spec=k8s.resource.v1.ResourceClaimTemplateSpecArgs(
            spec=k8s.resource.v1.ResourceClaimSpecArgs(
                devices=k8s.resource.v1.DeviceClaimArgs(
                    requests=[
                        k8s.resource.v1.DeviceRequestArgs(
                            name="gpu",
                            exactly=k8s.resource.v1.ExactDeviceRequestArgs(device_class_name=DEVICE_CLASS),
                        )
                    ]
                )
            )
        ),
        opts=opts,
    )
