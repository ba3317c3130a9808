"""The servers of one GPU read together: each check gets the neighbours that took what it was planned to have."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from colo.verify.compare import ServerCheck
from colo.verify.neighbours import (
    NeighbourTookMore,
    neighbours_took_more,
    observed_footprint,
    planned_footprint,
)
from colo.verify.startup_log import StartupLog
from colo.vllm import ProcessBudget


def with_neighbours(
    checks: Sequence[ServerCheck],
    gpus: Sequence[Sequence[tuple[str, ProcessBudget]]],
    logs: Mapping[str, StartupLog],
) -> list[ServerCheck]:
    """`checks` with their neighbour findings. `gpus`: each GPU's servers (name, planned budget) in start
    order; `logs`: the startup log read for each server name (a server not read has none)."""
    findings: dict[str, list[NeighbourTookMore]] = {}
    for servers in gpus:
        pairs = [
            (
                planned_footprint(name, budget),
                observed_footprint(name, logs[name]) if name in logs else None,
            )
            for name, budget in servers
        ]
        for finding in neighbours_took_more(pairs):
            findings.setdefault(finding.server, []).append(finding)
    return [replace(check, took_more=tuple(findings.get(check.name, ()))) for check in checks]
