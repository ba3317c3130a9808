"""Observed per-process constants for one GPU and vLLM release, written by `colo verify --record`.

A calibration adjusts the budget's inputs only: the GPU's CUDA context per process and the measured
constants (non-torch growth, CUDA-graph memory per graph and layer). vLLM's own rules (what it subtracts,
how it rounds, which capture sizes it picks) stay as colo/vllm/rules.yaml mirrors them. An entry applies to
exactly its GPU (colo's catalog name) and its vLLM release: a calibration never leaks into another GPU or
another release, whose figures were never observed.

Where several servers were observed, an entry keeps the largest figure seen, so the plan budgets for the
worst case; every observation stays listed with its provenance.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from colo.catalog import MIB
from colo.config.yaml_safety import UnsafeYaml, load_yaml
from colo.files import FileRefused, decode_utf8, read_bounded
from colo.plan.budget import ProcessSpec
from colo.stackfiles import find_project
from colo.vllm.rules import MeasuredConstants, constants

# Calibrated figure -> (label shown by `colo plan`, unit)
FIGURES = {
    "context_mib": ("CUDA context per process", "MiB"),
    "non_torch_growth_mib": ("non-torch growth", "MiB"),
    "cudagraph_kib_per_graph_layer": ("CUDA-graph memory per graph and layer", "KiB"),
}


class CalibrationError(Exception):
    """The calibration file cannot be read; the message says why."""


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
        return {key: value for key in FIGURES if (value := getattr(self, key)) is not None}

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
            f"{FIGURES[name][0]} {new} {FIGURES[name][1]} (catalog {old})" for name, new, old in self.figures
        )
        return f"{changed}; from {self.path}: {self.provenance}"


def resolve(path: str) -> Path:
    """Relative paths are read from the project directory (the nearest Pulumi.yaml from the working
    directory up, where the Pulumi CLI runs the program), else the working directory."""
    candidate = Path(path)
    if candidate.is_absolute():
        return candidate
    project = find_project()
    return (project.parent if project is not None else Path.cwd()) / candidate


_CACHE: dict[tuple[Path, int, int], Calibration] = {}
MAX_CALIBRATION_BYTES = 4 * MIB  # a recorded entry is a few hundred bytes


def load_calibration(path: str) -> Calibration:
    file = resolve(path)
    try:
        stat = file.stat()
    except OSError as exc:
        raise CalibrationError(f"cannot read {path}: {exc.strerror}") from None
    key = (file, stat.st_mtime_ns, stat.st_size)
    if key not in _CACHE:
        try:
            text = decode_utf8(read_bounded(file, MAX_CALIBRATION_BYTES))
            _CACHE[key] = Calibration.model_validate(load_yaml(text) or {})
        except (FileRefused, UnsafeYaml) as exc:
            raise CalibrationError(f"{path}: {exc}") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise CalibrationError(f"{path}: {where}: {first['msg']}") from None
    return _CACHE[key]


def calibration_problem(path: str | None) -> str | None:
    """Why the stack's calibration cannot be used, or None when it can (or none is named)."""
    if path is None:
        return None
    try:
        load_calibration(path)
    except CalibrationError as exc:
        return str(exc)
    return None


def _constants_with(
    spec: ProcessSpec, entry: CalibrationEntry
) -> tuple[MeasuredConstants, list[tuple[str, int, int]]]:
    consts = spec.constants or constants()
    changed: list[tuple[str, int, int]] = []
    updates: dict[str, int] = {}
    if entry.non_torch_growth_mib is not None:
        key = (
            "non_torch_growth_mib_cublas_in_baseline"
            if spec.rules.cublas_in_baseline
            else "non_torch_growth_mib"
        )
        updates[key] = entry.non_torch_growth_mib
        changed.append(("non_torch_growth_mib", entry.non_torch_growth_mib, getattr(consts, key)))
    # Recorded from dense models only (colo.verify.record); hybrid models keep the catalog's figure.
    if entry.cudagraph_kib_per_graph_layer is not None and not spec.arch.is_hybrid_linear:
        updates["cudagraph_kib_per_graph_layer"] = entry.cudagraph_kib_per_graph_layer
        changed.append(
            (
                "cudagraph_kib_per_graph_layer",
                entry.cudagraph_kib_per_graph_layer,
                consts.cudagraph_kib_per_graph_layer,
            )
        )
    return consts.model_copy(update=updates), changed


def calibrate(spec: ProcessSpec, path: str | None) -> ProcessSpec:
    """`spec` with the observed constants of its GPU and release, when the stack's calibration has them."""
    if path is None:
        return spec
    try:
        entry = load_calibration(path).entry_for(spec.gpu.name, spec.vllm_version)
    except CalibrationError:  # make_plan reports it as a problem of colo:budget.calibration
        return spec
    if entry is None:
        return spec
    consts, changed = _constants_with(spec, entry)
    gpu = spec.gpu
    if entry.context_mib is not None:
        changed.insert(0, ("context_mib", entry.context_mib, gpu.context_bytes // MIB))
        gpu = replace(gpu, context_bytes=entry.context_mib * MIB)
    if not changed:
        return spec
    applied = AppliedCalibration(path, entry.gpu, entry.vllm_version, tuple(changed), entry.provenance())
    return replace(spec, gpu=gpu, constants=consts, calibration=applied)
