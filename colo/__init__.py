"""colo: a large LLM and a small embedding model, both served by vLLM, on one GPU in Kubernetes.

The names in `__all__` are colo's public API (docs/components.md, "The public API and its versions"): the components
any Pulumi program can use and the stack schema's pieces they take. Each is loaded on first use, so
`import colo` itself, the schema's pieces and the memory model under it (colo.vllm) never import Pulumi.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

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
    "__version__",
]
# The stack schema's pieces come from colo.config.schema, which needs no Pulumi; the components from
# colo.components (which re-exports the pieces too).
_SCHEMA = frozenset(
    {"Budget", "Cluster", "DevicePlugin", "IngressSource", "Network", "NodePool", "Pair", "ServerSpec"}
    | {"Speculative", "Storage", "VllmImage"}
)

if TYPE_CHECKING:
    from colo.components import (
        ColocatedPair,
        ColocatedPairArgs,
        DevicePluginArgs,
        GpuNodePool,
        GpuNodePoolArgs,
        ModelStore,
        ModelStoreArgs,
        NvidiaDevicePlugin,
        PairFigures,
        ProgramError,
        SecretRef,
        ServerFigures,
    )
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


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'colo' has no attribute {name!r}")
    value = getattr(import_module("colo.config.schema" if name in _SCHEMA else "colo.components"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
