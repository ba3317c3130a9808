"""Where each server keeps vLLM's compile cache: on the model volume, one directory per image and flags.

vLLM writes torch.compile's artefacts under VLLM_CACHE_ROOT (vllm/compilation/backends.py:
VLLM_CACHE_ROOT/torch_compile_cache/<hash>), and points Inductor and Triton beside them
(vllm/compilation/compiler_interface.py, initialize_inductor_cache; 0.22.0 to 0.34.0). In the pod's emptyDir that
cache dies with the pod and every start compiles cold: slower, and the compiler's scratch memory is counted as
the activation peak, so the KV pool is smaller until the next restart (vllm #54383, #54122). On the model volume
it survives restarts and re-plans.

The directory is keyed by the image and the server's flags, less those that enter no compiled graph: the
memory-sizing flags vLLM itself leaves out of its compile hash (CacheConfig.compile_factors ignores
gpu_memory_utilization, and from 0.33.0 kv_cache_memory_bytes: vllm/config/cache.py) and the HTTP frontend's
--host and --port. A re-plan that moves a utilization so keeps a warm cache. vLLM hashes its own factors inside
the directory again, so a key coarser than vLLM's shares a directory, never an artefact.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from colo.model_volume import compile_cache_dir

# Flags (each with one value) left out of the key: see the module docstring.
UNKEYED_FLAGS = ("--gpu-memory-utilization", "--kv-cache-memory-bytes", "--host", "--port")
_UNKEYED_JOINED = tuple(f"{flag}=" for flag in UNKEYED_FLAGS)  # the --flag=value spelling
KEY_DIGITS = 12
# Our H100 run of vLLM 0.22.0 (bench/gpu/results/2026-12-07-h100-vllm-0.22.0.md): the first start with an empty
# cache against a warm restart of the same flags; bge-m3's cold capture (docs/vllm-memory-rules.md §5a: a model
# without a KV cache skips the memory profile, so its first forward and compile run inside capture_model).
FIRST_START = (
    "a first start of new flags compiles cold and gets a smaller KV pool until its next restart (H100, vLLM "
    "0.22.0: -1.5 % for Qwen3-14B, -5 % for Qwen3-Embedding-0.6B; vllm #54383: about 5 %; #54122: far more); "
    "a server without a KV cache (an encoder-only embedder) compiles inside its CUDA-graph capture, which then "
    "holds the compiler's scratch until it ends (bge-m3: 0.61 GiB against 0.12 warm); the plan's KV and graph "
    "figures are a warm start's"
)


@dataclass(frozen=True)
class CompileCache:
    """A server's compile cache: a directory on the model volume, or None where the volume is read-only."""

    sub_path: str | None
    where: str  # the plan's line: where the cache is and what a restart finds


def keyed_args(args: Sequence[str]) -> list[str]:
    """The flags that enter the key: `args` less UNKEYED_FLAGS and their values (either spelling)."""
    kept: list[str] = []
    skip_value = False
    for arg in args:
        if skip_value:
            skip_value = False
        elif arg in UNKEYED_FLAGS:
            skip_value = True
        elif not arg.startswith(_UNKEYED_JOINED):
            kept.append(arg)
    return kept


def compile_cache_key(vllm_version: str, image: str, args: Sequence[str]) -> str:
    """`v<release>-<12 hex digits of the image and the keyed flags>`: readable by release, apart by flags."""
    digest = hashlib.sha256(json.dumps([image, keyed_args(args)]).encode()).hexdigest()
    return f"v{vllm_version}-{digest[:KEY_DIGITS]}"


def compile_cache(
    pair: str, role: str, vllm_version: str, image: str, args: Sequence[str], *, volume_writable: bool
) -> CompileCache:
    """Where the server's compile cache lives, and the plan's line on it."""
    if not volume_writable:
        return CompileCache(
            None, "in the pod (a ReadOnlyMany storage.accessMode cannot hold it): every start compiles cold"
        )
    sub_path = compile_cache_dir(pair, role, compile_cache_key(vllm_version, image, args))
    return CompileCache(
        sub_path, f"model volume, {sub_path}: a restart, or a re-plan of memory alone, starts warm"
    )
