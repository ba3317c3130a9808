"""`python -m tests.control_plane.engine_driver up|destroy --stack S --project-dir D --report R`: colo's inline
program (colo.inline_engine.select_stack) under the real engine, recorded as colo.inline_engine records a run,
plus every diagnostic the engine reported (severity, resource, message).

The diagnostics are where a resource hook's messages and an ignored hook failure show: the engine prints them
in `pulumi up`'s "Diagnostics:" section, which the diff display colo.inline_engine asks for leaves out.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from pulumi import automation as auto

from colo.inline_engine import _Recorder, select_stack


class _Diagnostics(_Recorder):
    def __init__(self) -> None:
        super().__init__(echo=print)
        self.diagnostics: list[dict[str, str | None]] = []

    def event(self, event: auto.EngineEvent) -> None:
        super().event(event)
        found = event.diagnostic_event
        if found is not None and found.severity in {"info", "warning", "error"}:
            self.diagnostics.append({"severity": found.severity, "urn": found.urn, "message": found.message})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.control_plane.engine_driver")
    parser.add_argument("command", choices=["up", "destroy"])
    parser.add_argument("--stack", required=True)
    parser.add_argument("--project-dir", type=Path, required=True)
    parser.add_argument("--report", type=Path, required=True)
    args = parser.parse_args(argv)
    stack = select_stack(args.stack, args.project_dir)
    recorder = _Diagnostics()
    succeeded = True
    run = stack.up if args.command == "up" else stack.destroy
    try:
        run(on_output=recorder.output, on_event=recorder.event, color="never")
    except auto.CommandError:
        succeeded = False
    report = {**asdict(recorder.outcome(args.command, succeeded)), "diagnostics": recorder.diagnostics}
    args.report.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
