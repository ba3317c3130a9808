"""colo's components for any Pulumi program: each plans itself with colo's memory model (or takes its part of a
stack plan made once, as colo's own program does) and declares the result.

This is the public component API (README, "colo's components in your own program"); the modules under it
are colo's own and may change in any release. The arguments take the stack schema's own pieces (ServerSpec,
Cluster, NodePool, Storage, Budget, Network), re-exported here.
"""

from colo.components.containers import SecretRef
from colo.components.device_plugin import DevicePluginArgs, NvidiaDevicePlugin
from colo.components.errors import ProgramError
from colo.components.model_store import ModelStore, ModelStoreArgs
from colo.components.node_pool import GpuNodePool, GpuNodePoolArgs
from colo.components.pair import ColocatedPair
from colo.components.pair_args import ColocatedPairArgs
from colo.config.schema import (
    Budget,
    Cluster,
    DevicePlugin,
    IngressSource,
    Network,
    NodePool,
    Pair,
    ServerSpec,
    Speculative,
    Storage,
    VllmImage,
)
from colo.plan.figures import PairFigures, ServerFigures

__all__ = [
    "Budget",
    "Cluster",
    "ColocatedPair",
    "ColocatedPairArgs",
    "DevicePlugin",
    "DevicePluginArgs",
    "GpuNodePool",
    "GpuNodePoolArgs",
    "IngressSource",
    "ModelStore",
    "ModelStoreArgs",
    "Network",
    "NodePool",
    "NvidiaDevicePlugin",
    "Pair",
    "PairFigures",
    "ProgramError",
    "SecretRef",
    "ServerFigures",
    "ServerSpec",
    "Speculative",
    "Storage",
    "VllmImage",
]
