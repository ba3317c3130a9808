"""Observed per-process constants for one GPU and vLLM release, as `colo verify --record` writes them.

A calibration adjusts the budget's inputs only: the GPU's CUDA context per process and the measured
constants (non-torch growth, CUDA-graph memory per graph and layer). vLLM's own rules (what it subtracts,
how it rounds, which capture sizes it picks) stay as colo/vllm/rules.yaml mirrors them. An entry applies to
exactly its GPU (colo's catalog name) and its vLLM release: a calibration never leaks into another GPU or
another release, whose figures were never observed.

Where several servers were observed, an entry keeps the largest figure seen, so the plan budgets for the
worst case; every observation stays listed with its provenance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# Calibrated figure -> (label shown by `colo plan`, unit)
CALIBRATED_FIGURES = {
    "context_mib": ("CUDA context per process", "MiB"),
    "non_torch_growth_mib": ("non-torch growth", "MiB"),
    "cudagraph_kib_per_graph_layer": ("CUDA-graph memory per graph and layer", "KiB"),
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Observation(_Strict):
    """One server's startup, as `colo verify` read it: where, when, on what, and the figures it gave."""

    date: str
    server: str  # pair/role
    model: str
    vllm_version: str  # as the log printed it
    gpu_name: str  # as the node reports it, else the stack's catalog GPU
    driver: str
    source: str  # the pod and container, or the file, the log was read from
    figures: dict[str, float] = Field(default_factory=dict)


class CalibrationEntry(_Strict):
    gpu: str  # colo's catalog name (nodePool.gpu)
    vllm_version: str
    context_mib: int | None = None
    non_torch_growth_mib: int | None = None
    cudagraph_kib_per_graph_layer: int | None = None
    observed: tuple[Observation, ...] = ()

    def figures(self) -> dict[str, int]:
        return {key: value for key in CALIBRATED_FIGURES if (value := getattr(self, key)) is not None}

    def provenance(self) -> str:
        seen = "; ".join(
            f"{o.server} ({o.model}) on {o.date}, {o.gpu_name}, driver {o.driver}, vLLM {o.vllm_version}"
            for o in self.observed
        )
        return seen or "no observation recorded"


class Calibration(_Strict):
    calibrations: tuple[CalibrationEntry, ...] = ()

    def entry_for(self, gpu: str, vllm_version: str) -> CalibrationEntry | None:
        return next((e for e in self.calibrations if e.gpu == gpu and e.vllm_version == vllm_version), None)


@dataclass(frozen=True)
class AppliedCalibration:
    """What a calibration changed in one process's budget inputs, for `colo plan` to show."""

    path: str
    gpu: str
    vllm_version: str
    figures: tuple[tuple[str, int, int], ...]  # (figure, calibrated, catalog)
    provenance: str

    def view(self) -> dict[str, Any]:
        return {
            "file": self.path,
            "gpu": self.gpu,
            "vllm_version": self.vllm_version,
            "figures": {name: {"calibrated": new, "catalog": old} for name, new, old in self.figures},
            "observed": self.provenance,
        }

    def describe(self) -> str:
        changed = ", ".join(
            f"{CALIBRATED_FIGURES[name][0]} {new} {CALIBRATED_FIGURES[name][1]} (catalog {old})"
            for name, new, old in self.figures
        )
        return f"{changed}; from {self.path}: {self.provenance}"
