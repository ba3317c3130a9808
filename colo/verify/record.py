"""`colo verify --record`: turn what servers reported into a calibration file a stack can name.

Per observed server, the figures the log lets colo invert without guessing:
- CUDA context per process: total - free at startup of the first server in the pod's start order (it starts
  on an empty GPU), less the cuBLAS handles where the release creates them before its snapshot;
- non-torch growth: the summary line's non-torch memory (to 0.26), or consumed - weights (0.27+);
- CUDA-graph memory per graph and layer: the capture's "took X GiB" less the largest batch's buffers the
  plan counts, over graphs x layers (dense models only: hybrid ones have a constant of their own).
A server whose log is from another release than the plan's is not recorded: its figures would be filed
under the wrong release.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import yaml

from colo.catalog import GIB, MIB
from colo.config.calibration import load_calibration, resolve
from colo.plan.server import Server
from colo.verify.compare import logged_device_gib
from colo.verify.readings import ServerReading
from colo.verify.startup_log import StartupLog
from colo.vllm import (
    CALIBRATED_FIGURES,
    Calibration,
    CalibrationEntry,
    Observation,
    kib_per_graph_field,
    measured_constants,
    same_release,
)

KIB = 1024
HEADER = (
    "# colo calibration: per-process constants observed at vLLM startup (colo verify --record).\n"
    "# Name this file in a stack as colo:budget.calibration; each entry applies to its GPU and vLLM release\n"
    "# only, and every figure in it was informed by the logs listed under `observed`.\n"
)


@dataclass(frozen=True)
class Observed:
    server: Server
    first_in_pod: bool  # started first on the pair's GPU
    reading: ServerReading
    log: StartupLog


def _context_mib(item: Observed) -> int | None:
    rules = item.server.memory_plan.budget.spec.rules
    device = logged_device_gib(item.log)
    if not item.first_in_pod or device is None:
        return None
    total, free = device
    cublas = item.server.memory_plan.budget.spec.gpu.cublas_bytes // MIB if rules.cublas_in_baseline else 0
    mib = round((total - free) * 1024) - cublas
    return mib if mib > 0 else None


def _non_torch_mib(log: StartupLog) -> int | None:
    summary = log.summary
    if summary is None:
        return None
    if summary.non_torch_gib is not None:
        gib = summary.non_torch_gib
    elif summary.consumed_gib is not None and log.weights_gib is not None:
        gib = summary.consumed_gib - log.weights_gib
    else:
        return None
    mib = round(gib * 1024)
    return mib if mib > 0 else None


def _graph_kib(item: Observed) -> int | None:
    budget, log = item.server.memory_plan.budget, item.log
    graphs, arch = budget.graphs, budget.spec.arch
    if log.graph_gib is None or log.graph_gib <= 0 or graphs.count == 0 or arch.is_hybrid_linear:
        return None
    consts = budget.spec.constants or measured_constants()
    used = int(getattr(consts, kib_per_graph_field(budget.spec.gpu.compute_capability)))
    # the captured figure's part that scales with the instantiated graphs (one per layer piece and size)
    buffers = graphs.bytes - graphs.executables * used * KIB
    kib = (log.graph_gib * GIB - buffers) / (graphs.executables * KIB)
    return round(kib) if kib > 0 else None


def figures_of(item: Observed) -> dict[str, int]:
    found = {
        "context_mib": _context_mib(item),
        "non_torch_growth_mib": _non_torch_mib(item.log),
        "cudagraph_kib_per_graph_layer": _graph_kib(item),
    }
    return {key: value for key, value in found.items() if value is not None}


def _observation(item: Observed, gpu: str, driver: str | None, today: date) -> Observation:
    node = item.reading.node
    return Observation(
        date=today.isoformat(),
        server=f"{item.reading.pair}/{item.reading.role}",
        model=item.server.model,
        vllm_version=item.log.vllm_version or item.server.vllm_version,
        gpu_name=node.gpu_product or f"{gpu} (the stack's nodePool.gpu; the node did not say)",
        driver=node.driver or driver or "unknown",
        source=item.reading.source,
        figures={key: float(value) for key, value in figures_of(item).items()},
    )


def _merged(
    existing: CalibrationEntry | None, gpu: str, version: str, new: list[Observation]
) -> CalibrationEntry:
    observed = (*(existing.observed if existing else ()), *new)
    largest = {
        key: max(values)
        for key in CALIBRATED_FIGURES
        if (values := [int(o.figures[key]) for o in observed if key in o.figures])
    }
    return CalibrationEntry(gpu=gpu, vllm_version=version, observed=observed, **largest)


def record(
    path: str, gpu: str, items: list[Observed], *, driver: str | None, today: date
) -> tuple[list[str], list[str]]:
    """Add the observations to the file at `path` (created if missing); returns what was and was not recorded."""
    file = resolve(path)
    current = load_calibration(path) if file.exists() else Calibration()
    groups: dict[str, list[Observation]] = {}
    recorded, skipped = [], []
    for item in items:
        version = item.server.vllm_version
        if item.log.vllm_version and not same_release(version, item.log.vllm_version):
            skipped.append(
                f"{item.server.name}: its log is from vLLM {item.log.vllm_version}, the plan's {version}"
            )
            continue
        observation = _observation(item, gpu, driver, today)
        if not observation.figures:
            skipped.append(f"{item.server.name}: its log holds no figure colo can calibrate from")
            continue
        groups.setdefault(version, []).append(observation)
        recorded.append(
            f"{item.server.name}: {', '.join(f'{k} {int(v)}' for k, v in observation.figures.items())}"
        )
    entries = list(current.calibrations)
    for version, observations in groups.items():
        old = current.entry_for(gpu, version)
        entries = [e for e in entries if e is not old]
        entries.append(_merged(old, gpu, version, observations))
    data = Calibration(calibrations=tuple(entries)).model_dump(exclude_none=True)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(HEADER + yaml.safe_dump(data, sort_keys=False, width=110))
    return recorded, skipped
