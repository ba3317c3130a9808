"""`colo plan --format json` of the bench's stacks, as bench.gpu.make_spec.plan_json reads it, made by colo's
main in the test process instead of the `python -m colo plan` subprocess plan_json starts: a few milliseconds a
stack instead of 0.4 s of CPU, each stack once per test process. plan_json itself is run (and its output
compared with this one's) by tests/bench/gpu/test_tensor_parallel_run.py."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import tempfile
from pathlib import Path
from typing import Any

from bench.gpu.make_spec import SpecError, stack_file
from colo.cli import main


@functools.cache
def _plan_text(stack: str, gpu: str | None) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        path = stack_file(stack, gpu, Path(scratch))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["plan", "--config", str(path), "--format", "json"])
    if code not in (0, 1):  # as plan_json: a plan that does not fit is kept too
        raise SpecError(f"colo plan of {path} failed ({code}): {err.getvalue().strip()[-500:]}")
    return out.getvalue()


def stack_plan(stack: str, gpu: str | None = None) -> dict[str, Any]:
    """plan_json(stack, gpu), a copy of its own for each caller (build_spec's callers may change what it gives)."""
    return dict(json.loads(_plan_text(stack, gpu)))
