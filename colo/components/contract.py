"""The public contract of colo's components: one type-token scheme, and aliases from what each first shipped as.

Every component is `colo:index:<Name>` (as Pulumi's own packages name theirs, e.g. `eks:index:Cluster`), in
Python and from other languages alike. A type is part of every child's URN, so the earlier tokens live on as
aliases: the engine takes the renamed component, and each of its children, for the resource it deployed
under the old name, and replaces nothing. Components that wrapped one Kubernetes object are gone; their
object is now a child of what declared the wrapper, with an alias naming the wrapper as its old parent.
"""

from __future__ import annotations

import pulumi

PACKAGE = "colo"


def token(name: str) -> str:
    return f"{PACKAGE}:index:{name}"


# Each component's type as first released.
FIRST_RELEASED = {
    "ColocatedPair": "colo:pair:CoLocatedPair",
    "GpuNodePool": "colo:node_pool:GpuNodePool",
    "ModelStore": "colo:model_store:ModelStore",
    "NvidiaDevicePlugin": "colo:device_plugin:NvidiaDevicePlugin",
    "ServerMonitoring": "colo:monitoring:ServerMonitoring",
    "DcgmExporter": "colo:monitoring:DcgmExporter",
}

# The single-object wrappers folded into their parents, by what they wrapped.
NAMESPACE_WRAPPER = "colo:namespace:Namespace"
POD_SCRIPTS_WRAPPER = "colo:pod_scripts:PodScripts"
GPU_CLAIM_WRAPPER = "colo:gpu_claim:GpuClaimTemplate"
SECRET_WRAPPERS = {"hf-token": "colo:hf_token:HfTokenSecret", "vllm-api-key": "colo:api_key:ApiKeySecret"}


def renamed(name: str, opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
    """`opts` with the alias from the component's first-released type."""
    first = pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=FIRST_RELEASED[name])])
    return pulumi.ResourceOptions.merge(first, opts)


def old_urn(name: str, type_: str, parent: pulumi.Resource | pulumi.Input[str] | None) -> pulumi.Output[str]:
    """The URN a resource had under an earlier type (or an earlier parent, given as a resource or a URN)."""
    return pulumi.create_urn(name, type_, parent=parent)


def unwrapped(
    wrapper_name: str, wrapper_type: str, wrapper_parent: pulumi.Resource | pulumi.Input[str] | None
) -> pulumi.ResourceOptions:
    """Options for an object that a wrapper component (`wrapper_type` named `wrapper_name`, itself a child of
    `wrapper_parent`; None: the stack) used to hold: its old parent was the wrapper."""
    previous = old_urn(wrapper_name, wrapper_type, wrapper_parent)
    return pulumi.ResourceOptions(aliases=[pulumi.Alias(parent=previous)])
