"""A DRA ResourceClaimTemplate: each pair's pod gets one claim, shared by all its servers (same GPU); for a
tensor-parallel LLM, one claim of N device requests (`gpu-0` .. `gpu-<N-1>`, one GPU each, so the N are distinct),
the LLM using all of them and each companion the one request of the GPU it was placed on.

NVIDIA's DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu, which publishes the `gpu.nvidia.com` device
class) is a cluster prerequisite, installed with its GPU kubelet plugin enabled on nodes that run no
classic device plugin; see docs/kubernetes.md.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

DEVICE_CLASS = "gpu.nvidia.com"
CLAIM_NAME = "gpu"  # the name containers use in resources.claims
REQUEST_NAME = "gpu"  # the claim's one device request, for a pair on one GPU
TEMPLATE_NAME = "single-gpu"  # what each pod's resourceClaimTemplateName names, for pairs on one GPU


def group_request(gpu: int) -> str:
    """The device request of GPU `gpu` of a tensor-parallel pair's group."""
    return f"gpu-{gpu}"


def claim_requests(gpus: int) -> list[str]:
    """The device requests of a pair's claim, in the group's GPU order."""
    return [REQUEST_NAME] if gpus == 1 else [group_request(k) for k in range(gpus)]


def template_name_for(gpus: int) -> str:
    """The stack's template for pairs of `gpus` GPUs."""
    return TEMPLATE_NAME if gpus == 1 else f"gpus-{gpus}"


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


def gpu_claim_template(
    name: str,
    *,
    namespace: pulumi.Input[str],
    labels: dict[str, str],
    gpus: int = 1,
    mps: bool = False,
    template_name: str | None = None,
    opts: pulumi.ResourceOptions,
) -> k8s.resource.v1.ResourceClaimTemplate:
    """The template for pairs of `gpus` GPUs (a tensor-parallel LLM's group), named `template_name` (default:
    the stack's, template_name_for); `mps`: the driver shares the claimed GPU among the pod's servers by CUDA
    MPS (one GPU only)."""
    named = template_name if template_name is not None else template_name_for(gpus)
    return k8s.resource.v1.ResourceClaimTemplate(
        name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=named, namespace=namespace, labels=labels),
        spec=k8s.resource.v1.ResourceClaimTemplateSpecArgs(
            spec=k8s.resource.v1.ResourceClaimSpecArgs(
                devices=k8s.resource.v1.DeviceClaimArgs(
                    requests=[
                        k8s.resource.v1.DeviceRequestArgs(
                            name=request,
                            exactly=k8s.resource.v1.ExactDeviceRequestArgs(device_class_name=DEVICE_CLASS),
                        )
                        for request in claim_requests(gpus)
                    ],
                    config=[mps_config()] if mps else None,
                )
            )
        ),
        opts=opts,
    )
