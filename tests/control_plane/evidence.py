"""What a control-plane run showed, written as JSON where COLO_E2E_EVIDENCE names a directory; nothing otherwise.

The tests assert; this only keeps the figures they asserted on (objects admitted, where each pod landed, the
engine's step counts) so a run can be quoted in a review without rerunning it.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from colo.inline_engine import Outcome

EVIDENCE_DIR = "COLO_E2E_EVIDENCE"


def record(name: str, data: Any) -> Path | None:
    directory = os.environ.get(EVIDENCE_DIR)
    if not directory:
        return None
    path = Path(directory) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def step_summary(outcome: Outcome) -> dict[str, Any]:
    """An engine run as `pulumi up` sums it up: succeeded, and the count of each operation by resource type."""
    counts = Counter(f"{step.op} {step.type}" for step in outcome.steps)
    return {"succeeded": outcome.succeeded, "steps": dict(sorted(counts.items())), "errors": outcome.errors}
