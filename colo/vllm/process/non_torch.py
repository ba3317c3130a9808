"""Non-torch memory growth: what a vLLM process's device memory outside PyTorch's allocator grows by between its
startup snapshot and the end of its memory profile, which vLLM takes off the KV pool ("non-torch forward
increase memory", `utils/mem_utils.py::memory_profiling`; from 0.27 inside `total_consumed`).

At one GPU rank (tensor-parallel communicators are tp_comm's) two things grow there:

* The libraries' own state made by the startup's first matmuls and kernels: cuBLAS/cuBLASLt handles and what
  they keep per stream and thread, and kernel modules loaded lazily. PyTorch allocates the cuBLAS workspaces
  themselves through its caching allocator (`aten/src/ATen/cuda/CublasHandlePool.cpp::getNewWorkspace`), so
  they are torch memory, not this. The sum is measured per PyTorch build, because cuBLAS comes with it
  (rules.yaml `non_torch_startup_mib_by_torch`); where the release creates the cuBLAS handles before its
  snapshot (0.33 `v1/worker/gpu_worker.py::Worker.init_device`), the first matmul's share is already in the
  baseline. A PyTorch no measurement covers keeps the allowance colo had before (`non_torch_growth_mib`).
* The CUDA graphs `profile_cudagraph_memory` captures to estimate graph memory, where it runs inside the
  profiling window (0.18 - 0.26, `v1/worker/gpu_worker.py::determine_available_memory`: the estimate is taken
  inside `with memory_profiling(...)`; from 0.27 after it): the driver keeps each instantiated graph's memory
  after the graph is destroyed, outside PyTorch, so the sampled graphs' executables count as non-torch growth
  (their size is colo.vllm.process.cudagraph's, `GraphPlan.profile_executable_bytes`). The capture stream's
  cuBLAS workspace is PyTorch memory and the activation figure reads the peak from before the estimate, so
  neither term takes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.catalog import MIB
from colo.vllm.rules import MeasuredConstants, VllmRules


@dataclass(frozen=True)
class NonTorchGrowth:
    """One process's non-torch growth by what makes it (bytes)."""

    startup_bytes: int  # libraries' state after the snapshot: cuBLAS handles, per-stream state, kernels
    graph_profile_bytes: int  # the estimate's sampled graphs' driver memory, inside the profiling window
    measured: bool  # startup_bytes is a measurement for this PyTorch build (else the allowance)
    torch_minor: str | None  # the PyTorch minor release the figure is for ("2.11"), when known

    @property
    def total_bytes(self) -> int:
        return self.startup_bytes + self.graph_profile_bytes


def torch_minor(torch_release: str | None) -> str | None:
    """'2.11.0+cu130' -> '2.11'; None for a build whose PyTorch the catalog does not state."""
    if not torch_release:
        return None
    parts = torch_release.split("+", 1)[0].split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and all(p.isdigit() for p in parts[:2]) else None


def non_torch_growth(
    rules: VllmRules,
    consts: MeasuredConstants,
    *,
    torch_release: str | None,
    graph_profile_executable_bytes: int = 0,
) -> NonTorchGrowth:
    """The non-torch growth vLLM measures for one process of `rules`'s release built with `torch_release`
    (the build's PyTorch, colo.catalog.images), whose graph profile left `graph_profile_executable_bytes` of
    driver memory (0 where no graph is profiled)."""
    minor = torch_minor(torch_release)
    measured = consts.non_torch_startup_mib_by_torch.get(minor) if minor else None
    if measured is not None:
        first_use = consts.cublas_first_use_mib_by_torch.get(minor, 0) if minor else 0
        startup_mib = measured - (first_use if rules.cublas_in_baseline else 0)
    elif rules.cublas_in_baseline:
        startup_mib = consts.non_torch_growth_mib_cublas_in_baseline
    else:
        startup_mib = consts.non_torch_growth_mib
    in_window = graph_profile_executable_bytes if rules.graph_profile_in_memory_window else 0
    return NonTorchGrowth(startup_mib * MIB, in_window, measured is not None, minor)
