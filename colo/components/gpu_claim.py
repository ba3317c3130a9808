"""A DRA ResourceClaimTemplate: each pair's pod gets one claim, shared by all its servers (same GPU); for a
tensor-parallel LLM, one claim of N device requests (`gpu-0` .. `gpu-<N-1>`, one GPU each, so the N are distinct),
the LLM using all of them and each companion the one request of the GPU it was placed on.

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
REQUEST_NAME = "gpu"  # the claim's one device request, for a pair on one GPU


def group_request(gpu: int) -> str:
    """The device request of GPU `gpu` of a tensor-parallel pair's group."""
    return f"gpu-{gpu}"


def claim_requests(gpus: int) -> list[str]:
    """The device requests of a pair's claim, in the group's GPU order."""
    return [REQUEST_NAME] if gpus == 1 else [group_request(k) for k in range(gpus)]


def template_name_for(gpus: int) -> str:
    """The stack's template for pairs of `gpus` GPUs."""
    return "single-gpu" if gpus == 1 else f"gpus-{gpus}"


@dataclass(frozen=True)
class GpuClaimTemplateArgs:
    namespace: pulumi.Input[str]
    labels: dict[str, str]
    template_name: str = "single-gpu"  # what each pod's resourceClaimTemplateName names
    gpus: int = 1  # the pair's GPUs: a tensor-parallel LLM's group
    mps: bool = False  # the driver shares the claimed GPU among the pod's servers by CUDA MPS (one GPU only)


def mps_config() -> k8s.resource.v1.DeviceClaimConfigurationArgs:
    """The driver's MPS sharing for the claim's GPU (kubernetes-sigs/dra-driver-nvidia-gpu
    api/nvidia.com/resource/v1beta1: GpuConfig, GpuSharing strategy MPS; needs its MPSSupport feature gate). No
    default limits: every client may use all threads and memory unless its own CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
    lowers its share, and memory is colo's budget's to divide."""
    return k8s.resource.v1.DeviceClaimConfigurationArgs(
        requests=[REQUEST_NAME],
        opaque=k8s.resource.v1.OpaqueDeviceConfigurationArgs(
            driver=DEVICE_CLASS,
            parameters={
                "apiVersion": "resource.nvidia.com/v1beta1",
                "kind": "GpuConfig",
                "sharing": {"strategy": "MPS"},
            },
        ),
    )


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
                                name=request,
                                exactly=k8s.resource.v1.ExactDeviceRequestArgs(
                                    device_class_name=DEVICE_CLASS
                                ),
                            )
                            for request in claim_requests(args.gpus)
                        ],
                        config=[mps_config()] if args.mps else None,
                    )
                )
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.template_name = template.metadata.name
        self.register_outputs({"template_name": self.template_name})
