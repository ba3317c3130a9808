"""What the servers started before one on its GPU hold below their planned footprint while they are idle.

A pair's servers start in order and none is ready for traffic until all are, so a server's first start finds the
ones before it idle. The plan's footprint of a server whose KV pool is sized from its memory profile (releases
before 0.34) holds its activation peak, which load grows back to; idle, it does not hold it: vLLM returns the
profile's activations to the driver before it allocates the KV cache (vllm 0.22.0 utils/mem_utils.py::
memory_profiling: `gc.collect(); torch.accelerator.empty_cache()` after the profile). The plan's startup check
keeps every earlier server at its footprint, the case of a restart beside busy neighbours; `colo verify` holds a
first start's log against the idle case.

Only a pair on one GPU is counted: a tensor-parallel LLM's companions each sit on a GPU of their own. A server
sized after its warm-up (0.34+) or without a memory profile (no KV cache) returns nothing colo has read in source.
"""

from __future__ import annotations

from collections.abc import Sequence

from colo.plan.pair import PairPlan
from colo.vllm import ProcessBudget


def _returned_when_idle(budget: ProcessBudget) -> int:
    if (
        budget.measured is not None
        or budget.capacity is None
        or budget.spec.kv_cache_memory_bytes is not None
    ):
        return 0
    return budget.activation_bytes


def returned_before(pairs: Sequence[PairPlan]) -> dict[str, int]:
    """Each server's name: the bytes the servers started before it on its GPU hold below their footprint idle."""
    found: dict[str, int] = {}
    for pair in pairs:
        budgets = [server.memory_plan.budget for server in pair.servers]
        if any(b.spec.tensor_parallel_size > 1 for b in budgets):
            continue
        returned = 0
        for server, budget in zip(pair.servers, budgets, strict=True):
            found[server.name] = returned
            returned += _returned_when_idle(budget)
    return found
