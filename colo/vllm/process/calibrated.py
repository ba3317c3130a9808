"""A process's budget inputs with a calibration's observed constants for its GPU and release."""

from __future__ import annotations

from dataclasses import replace

from colo.catalog import MIB
from colo.vllm.calibration import AppliedCalibration, CalibrationEntry
from colo.vllm.process.budget import ProcessSpec
from colo.vllm.process.cudagraph import kib_per_graph_field
from colo.vllm.rules import MeasuredConstants, measured_constants


def _constants_with(
    spec: ProcessSpec, entry: CalibrationEntry
) -> tuple[MeasuredConstants, list[tuple[str, int, int]]]:
    consts = spec.constants or measured_constants()
    changed: list[tuple[str, int, int]] = []
    updates: dict[str, object] = {}
    if entry.non_torch_growth_mib is not None:
        # the observed figure replaces the measured one of the build's PyTorch too (non_torch.non_torch_growth
        # falls back to the keys below when no measurement covers the build)
        updates["non_torch_startup_mib_by_torch"] = {}
        key = (
            "non_torch_growth_mib_cublas_in_baseline"
            if spec.rules.cublas_in_baseline
            else "non_torch_growth_mib"
        )
        updates[key] = entry.non_torch_growth_mib
        changed.append(("non_torch_growth_mib", entry.non_torch_growth_mib, getattr(consts, key)))
    # Recorded from dense models only (colo.verify.record); hybrid models keep the catalog's figure. The
    # calibration's GPU decides which of the per-graph constants it replaces.
    if entry.cudagraph_kib_per_graph_layer is not None and not spec.arch.is_hybrid_linear:
        field = kib_per_graph_field(spec.gpu.compute_capability)
        updates[field] = entry.cudagraph_kib_per_graph_layer
        changed.append(
            ("cudagraph_kib_per_graph_layer", entry.cudagraph_kib_per_graph_layer, getattr(consts, field))
        )
    return consts.model_copy(update=updates), changed


def calibrated(spec: ProcessSpec, entry: CalibrationEntry, path: str) -> ProcessSpec:
    """`spec` with `entry`'s observed figures (read from `path`), or `spec` itself when it changes none."""
    consts, changed = _constants_with(spec, entry)
    gpu = spec.gpu
    if entry.context_mib is not None:
        changed.insert(0, ("context_mib", entry.context_mib, gpu.context_bytes // MIB))
        gpu = replace(gpu, context_bytes=entry.context_mib * MIB)
    if not changed:
        return spec
    applied = AppliedCalibration(path, entry.gpu, entry.vllm_version, tuple(changed), entry.provenance())
    return replace(spec, gpu=gpu, constants=consts, calibration=applied)
