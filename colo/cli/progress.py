"""A line on stderr for each step that takes seconds (running the program, rendering both sides of a diff,
searching instance types), so a slow command never sits silent; stdout stays the command's output alone."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def step(command: str, what: str) -> Iterator[None]:
    """`colo render: running the program under Pulumi's mock runtime ...`; on a terminal the same line then
    ends with how long it took, elsewhere (a CI log) the start line stands alone."""
    stream = sys.stderr
    interactive = stream.isatty()
    print(f"colo {command}: {what} ...", end="" if interactive else "\n", file=stream, flush=True)
    started = time.monotonic()
    try:
        yield
    finally:
        if interactive:
            print(f" {time.monotonic() - started:.1f} s", file=stream, flush=True)
