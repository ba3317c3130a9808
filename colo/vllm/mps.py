"""A vLLM process as a CUDA MPS client: the memory it holds outside vLLM's budget, from measured figures alone.

Under MPS each server's CUDA context is a client context on the MPS server, and the server itself (started by
the control daemon when the first client connects) holds memory of its own. vLLM takes its startup snapshot after
its context exists, so both stay outside its budget, as the context does without MPS. The model therefore swaps
two inputs of the budget and changes none of its rules:

    context of a client at p % threads:   client_context(p) + client_cublas(p)   (cuBLAS where the release counts it)
    the first client of the pair:         + the MPS server's memory, which appears as it connects

Figures come from colo/catalog/mps.yaml, measured per GPU and thread percentage. Between two measured percentages
the figure is interpolated linearly: NVIDIA's MPS documentation says a client's context storage and scheduling
resources scale with the threads available to it (inferred to be monotonic between measured points; the
measurements show how close to linear). Outside the measured range nothing is stated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from colo.catalog.gpus import GpuSpec
from colo.catalog.mps import MpsFigures
from colo.catalog.units import MIB

FULL_GPU_PERCENTAGE = 100  # a client without CUDA_MPS_ACTIVE_THREAD_PERCENTAGE may use every thread


@dataclass(frozen=True)
class MpsClient:
    """One MPS client's memory outside vLLM's budget; `server_bytes` is non-zero for the pair's first client."""

    percentage: int
    context_bytes: int
    cublas_bytes: int
    sm_count: int  # what CUDA reports to the client; vLLM sizes the Triton sampler's scratch rows by it
    server_bytes: int = 0
    interpolated: bool = False

    def describe(self) -> str:
        how = "interpolated between measured percentages" if self.interpolated else "measured"
        server = f", plus the MPS server's {self.server_bytes // MIB} MiB" if self.server_bytes else ""
        return (
            f"MPS client at {self.percentage} % threads: context {self.context_bytes // MIB} MiB and cuBLAS "
            f"{self.cublas_bytes // MIB} MiB ({how}){server}"
        )


def at_percentage(points: Mapping[int, int], percentage: int) -> tuple[int, bool] | None:
    """The figure at `percentage`: measured, or interpolated between the two measured percentages around it
    (True then; rounded down, so an SM count stays whole and never above what was seen); None outside the
    measured range."""
    if percentage in points:
        return points[percentage], False
    below = [p for p in points if p < percentage]
    above = [p for p in points if p > percentage]
    if not below or not above:
        return None
    low, high = max(below), min(above)
    share = (percentage - low) / (high - low)
    return int(points[low] + share * (points[high] - points[low])), True


def unmeasured_reason(figures: MpsFigures | None, gpu_name: str, percentage: int) -> str | None:
    """Why no client at `percentage` can be stated on this GPU; None when it can."""
    if figures is None or not figures.measured:
        return (
            f"colo has no measured CUDA MPS figures for {gpu_name} (colo/catalog/mps.yaml): the MPS server's memory "
            f"and a client's context are to be measured with bench/gpu/measure_mps.py, and colo does not assume them"
        )
    kinds = (
        ("context", figures.client_context_bytes),
        ("cuBLAS", figures.client_cublas_bytes),
        ("SM count", figures.client_sm_count),
    )
    for name, points in kinds:
        if at_percentage(points, percentage) is None:
            measured = ", ".join(f"{p} %" for p in sorted(points))
            return (
                f"a client's {name} at {percentage} % threads is outside what was measured on {gpu_name} "
                f"({measured}); choose a percentage in that range"
            )
    return None


def mps_client(figures: MpsFigures, percentage: int | None, *, first: bool) -> MpsClient:
    """The client's figures; call only where `unmeasured_reason` found none."""
    share = FULL_GPU_PERCENTAGE if percentage is None else percentage
    context = at_percentage(figures.client_context_bytes, share)
    cublas = at_percentage(figures.client_cublas_bytes, share)
    sms = at_percentage(figures.client_sm_count, share)
    if context is None or cublas is None or sms is None or figures.server_bytes is None:
        raise ValueError(unmeasured_reason(figures, figures.gpu, share) or "MPS figures missing")
    return MpsClient(
        share,
        context[0],
        cublas[0],
        sms[0],
        figures.server_bytes if first else 0,
        interpolated=context[1] or cublas[1] or sms[1],
    )


def gpu_as_client(gpu: GpuSpec, client: MpsClient) -> GpuSpec:
    """The GPU as this client's budget sees it: its context, cuBLAS and SM count are the client's."""
    return replace(
        gpu,
        context_bytes=client.context_bytes + client.server_bytes,
        cublas_bytes=client.cublas_bytes,
        sm_count=client.sm_count,
    )
