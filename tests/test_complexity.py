"""No function in colo is too branchy to read: each stays at or below a cyclomatic complexity of 15."""

from __future__ import annotations

import gc

from radon.complexity import add_inner_blocks, cc_visit

from tests.paths import REPO_ROOT

MAX_COMPLEXITY = 15


def test_no_function_in_colo_exceeds_the_complexity_limit() -> None:
    too_complex = []
    # A finalizer that runs inside the parser (a never-awaited future of an earlier test, logging as it goes)
    # breaks CPython 3.11's AST recursion bookkeeping: SystemError "AST constructor recursion depth mismatch".
    # Such garbage is finalized by the cyclic collector; collecting it once and then keeping the collector off
    # while parsing leaves nothing to finalize mid-parse. (A collection per file cost a minute inside the
    # suite, where the heap of earlier tests is large; one costs a fraction of a second.)
    gc.collect()
    gc.disable()
    try:
        for path in sorted((REPO_ROOT / "colo").rglob("*.py")):
            for block in add_inner_blocks(cc_visit(path.read_text())):
                if block.complexity > MAX_COMPLEXITY:
                    where = path.relative_to(REPO_ROOT)
                    too_complex.append(f"{where}:{block.lineno} {block.name} ({block.complexity})")
    finally:
        gc.enable()
    assert not too_complex, f"split these into named steps: {too_complex}"
