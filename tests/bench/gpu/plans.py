"""`colo plan --format json` of the bench's stacks, as bench.gpu.make_spec.plan_json makes it (a subprocess each),
made once per test process: the spec's, the comparison's and the MPS runs' tests plan the same stacks. Their
modules share the xdist group PLANS, so that one worker plans each stack once."""

from __future__ import annotations

import functools
import json
from typing import Any

from bench.gpu.make_spec import plan_json

PLANS = "bench-plans"  # the xdist group of the tests that plan these stacks


@functools.cache
def _plan_text(stack: str, gpu: str | None) -> str:
    return json.dumps(plan_json(stack, gpu))


def stack_plan(stack: str, gpu: str | None = None) -> dict[str, Any]:
    """plan_json(stack, gpu), a copy of its own for each caller (build_spec's callers may change what it gives)."""
    return dict(json.loads(_plan_text(stack, gpu)))
