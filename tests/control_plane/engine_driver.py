"""`python -m tests.control_plane.engine_driver destroy --stack S --project-dir D --report R`: `pulumi destroy` of a
colo stack through the Automation API, recorded as colo.inline_engine records `up` (steps, errors, output).

colo.inline_engine drives preview and up; a test that deploys to a live API server must also take everything
away again, and reads what the engine did in the same form.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from pulumi import automation as auto

from colo.inline_engine import _Recorder, select_stack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.control_plane.engine_driver")
    parser.add_argument("command", choices=["destroy"])
    parser.add_argument("--stack", required=True)
    parser.add_argument("--project-dir", type=Path, required=True)
    parser.add_argument("--report", type=Path, required=True)
    args = parser.parse_args(argv)
    stack = select_stack(args.stack, args.project_dir)
    recorder = _Recorder(echo=print)
    succeeded = True
    try:
        stack.destroy(on_output=recorder.output, on_event=recorder.event, color="never")
    except auto.CommandError:
        succeeded = False
    outcome = recorder.outcome("destroy", succeeded)
    args.report.write_text(json.dumps(asdict(outcome), indent=2) + "\n")
    return 0 if succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
