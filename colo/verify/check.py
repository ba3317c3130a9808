"""One server's reading held against its plan: what `colo verify` prints for it, and what `--record` may learn."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from colo.plan.pair import PairPlan
from colo.plan.server import Server
from colo.verify.compare import ServerCheck, compare, other_total
from colo.verify.idle import returned_before
from colo.verify.metrics import cache_config_info
from colo.verify.readings import ServerReading
from colo.verify.record import Observed
from colo.verify.shared_gpu import with_neighbours
from colo.verify.startup_log import StartupLog, parse_startup_log

NO_STARTUP_LINES = (
    "the log holds none of vLLM's startup lines (Model loading took, Available KV cache memory, GPU KV cache "
    "size, or a startup error): it may be cut, from another program, or from before the engine started"
)
COLD_COMPILE = (
    'torch.compile ran on an empty compile cache ("Compiling a graph for ..."): the activation peak, and for a '
    "model without a KV cache the CUDA-graph capture, hold the compiler's scratch, which the plan (a warm "
    "start's) does not; a restart on the cache this start filled is the start to compare"
)

IDLE_BEFORE = (
    "free memory at startup compared with the servers before it idle, as a first start in order finds them: "
    "{gib:.2f} GiB of their activation peaks back with the driver (the plan's startup check keeps them at their "
    "footprint, as a restart beside busy neighbours finds them)"
)

CUT_BEFORE_KV = (
    "the log ends before vLLM sized the KV cache and holds no startup error: the start did not finish (stopped, "
    "or still starting), so the plan cannot be confirmed from it; compare the log of a finished start"
)


def _cut_before_kv(server: Server, log: StartupLog) -> bool:
    """A server planned with a KV cache whose log has neither its size nor an error: a start cut short, whose
    few figures (weights) would otherwise read as a plan that holds."""
    if server.memory_plan.budget.capacity is None or log.error is not None:
        return False
    return log.kv_tokens is None and log.kv_pool_gib is None and log.measured_kv is None


def _total_note(server: Server, total: float | None) -> str | None:
    """What `total` (other_total's) means for the comparison, None where the logged total is the plan's."""
    if total is None:
        return None
    gpu = server.memory_plan.budget.spec.gpu
    return (
        f"the device's total as vLLM logged it is {total:.2f} GiB, not the {gpu.cuda_total_bytes / 2**30:.2f} GiB "
        f"colo planned {gpu.name} with (the driver's reserved memory differs): requested memory is compared as "
        f"{total:.2f} GiB x the utilization; plan with nodePool.gpuMemoryMiB (about {round(total * 1024)}, the "
        f"total vLLM prints in MiB) to size for this card"
    )


def _notes(log: StartupLog, returned_before: int) -> tuple[str, ...]:
    """What the reader should know beside the terms: what the log itself says, and how it was compared."""
    notes: tuple[str, ...] = (
        (f"{log.ranks} tensor-parallel ranks logged; per-rank figures are the worst rank's",)
        if log.ranks > 1
        else ()
    )
    if log.serving_error is not None:
        notes += (f"started, then failed while serving: {log.serving_error.text}",)
    if log.utilization_cap is not None:
        cap = log.utilization_cap
        notes += (
            f"vLLM warned that gpu_memory_utilization={cap.utilization:g} caps it at {cap.cap_gib:g} GiB, "
            f"keeping {cap.withheld_gib:g} GiB of free memory out of its KV cache: on a shared GPU that cap is "
            "what leaves its neighbours their memory",
        )
    if log.extensible_disabled is not None:
        notes += (f"vLLM sized its KV cache from profiling estimates: {log.extensible_disabled}",)
    if log.compile_cache == "cold":
        notes += (COLD_COMPILE,)
    if returned_before:
        notes += (IDLE_BEFORE.format(gib=returned_before / 2**30),)
    return notes


def check_reading(
    reading: ServerReading,
    planned: dict[str, tuple[Server, bool]],
    returned: Mapping[str, int] | None = None,
) -> tuple[ServerCheck, Observed | None]:
    """One server's check, and what `--record` may learn from it (None when nothing was read). `returned`: by
    server name, what the servers started before it hold below their footprint while idle (colo.verify.idle)."""
    base = ServerCheck(reading.pair, reading.role, reading.name, reading.source)
    if reading.name not in planned:
        known = ", ".join(name.replace("-", "/", 1) for name in planned) or "none"
        return replace(
            base, unread=f"the plan has no server {reading.pair}/{reading.role} (planned: {known})"
        ), None
    server, first_in_pod = planned[reading.name]
    if reading.unread is not None or reading.log_text is None:
        return replace(base, unread=reading.unread or "no log"), None
    log = parse_startup_log(reading.log_text)
    if not log.has_startup_lines:
        return replace(base, unread=NO_STARTUP_LINES), None
    if _cut_before_kv(server, log):
        return replace(base, unread=CUT_BEFORE_KV), None
    cache = cache_config_info(reading.metrics_text) if reading.metrics_text else None
    before = (returned or {}).get(reading.name, 0)
    budget = server.memory_plan.budget
    total = other_total(budget, log)
    check = replace(
        base,
        results=compare(
            budget, log, cache, release=server.vllm_version, returned_before=before, device_total=total
        ),
        error=log.error.describe() if log.error else None,
        notes=_notes(log, before),
        device_note=_total_note(server, total),
    )
    return check, Observed(server, first_in_pod, reading, log)


def check_readings(
    readings: Sequence[ServerReading], planned: dict[str, tuple[Server, bool]], pairs: Sequence[PairPlan]
) -> tuple[list[ServerCheck], list[Observed]]:
    """Every reading of `pairs`' servers checked: each against the servers before it on its GPU idle
    (colo.verify.idle), and with the neighbours started before it that hold more than planned while it got less
    (colo.verify.neighbours); and what `--record` may learn from those read."""
    returned = returned_before(pairs)
    checked = [check_reading(reading, planned, returned) for reading in readings]
    gpus = [[(server.name, server.memory_plan.budget) for server in pair.servers] for pair in pairs]
    observed = [item for _, item in checked if item is not None]
    logs = {item.server.name: item.log for item in observed}
    return with_neighbours([check for check, _ in checked], gpus, logs), observed
