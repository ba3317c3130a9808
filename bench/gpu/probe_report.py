"""Summarise the startup probe's records of a GPU run (harness.startup_probe), one section per server start.

    python bench/gpu/probe_report.py RUN-logs.tar.gz [--json OUT]

For each `<log name>-probe-<pid>.json` in the run's log archive: the growth of memory outside PyTorch from
the worker's snapshot (its `init_device` exit) to each later call's exit, which is what vLLM prints as
non-torch growth when read at the end of profiling; the CUDA streams and threads the process created, with
their creators; and for each `profile_run` the peak above its start, the allocation sites alive at that peak,
and the most that benchmarking buffers (Triton's do_bench, Inductor's benchmarker) held; then, once it served,
the most PyTorch reserved, held allocated, left cached but unused, and held outside its allocator after a step.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

_PROBE = re.compile(r"(?P<log>[^/]+)-probe-(?P<pid>\d+)\.json$")
TOP = 12


def probes(archive: Path) -> list[tuple[str, dict[str, Any]]]:
    """(log name, the probe's record) of every probe file in the archive, in name order."""
    found = []
    with tarfile.open(archive) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            match = _PROBE.search(member.name)
            handle = tar.extractfile(member) if match else None
            if match and handle:
                found.append((match.group("log"), json.loads(handle.read())))
    return found


def _exits(events: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for e in events if e.get("phase") == "exit" and "outside_torch_mib" in e]


def non_torch_by_call(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Outside-PyTorch memory at each call's exit, measured from the worker's snapshot (init_device's exit)."""
    exits = _exits(record.get("events", []))
    baseline = next((e for e in exits if e["call"].endswith("Worker.init_device")), None)
    if baseline is None:
        return []
    start = float(baseline["outside_torch_mib"])
    return [
        {
            "call": e["call"],
            "index": e.get("call_index"),
            "t": e.get("t"),
            "growth_mib": round(float(e["outside_torch_mib"]) - start, 1),
            "stack_limit_bytes": e.get("stack_limit_bytes"),
            "streams": e.get("streams_created"),
            "threads": e.get("threads"),
        }
        for e in exits
        if e is not baseline and e["t"] >= baseline["t"]
    ]


def summary(log: str, record: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "server": log,
        "pid": record.get("pid"),
        "non_torch": non_torch_by_call(record),
        "streams": record.get("streams", []),
        "threads": record.get("threads", []),
        "profiles": [
            {
                key: profile.get(key)
                for key in (
                    "call",
                    "peak_increase_mib",
                    "benchmark_buffers_peak_mib",
                    "still_allocated_mib",
                )
            }
            | {"at_peak": profile.get("at_peak", [])[:TOP]}
            for profile in record.get("profiles", [])
        ],
        "serving": record.get("serving") or {"steps": 0},
    }


SERVING_MAXIMA = ("reserved_mib", "allocated_mib", "inactive_split_mib", "outside_torch_mib")


def serving_lines(serving: Mapping[str, Any]) -> list[str]:
    """Each serving maximum beside the first step's reading: what grew under load, and where it sits."""
    if not serving.get("steps"):
        return ["serving: no step recorded"]
    first = serving["first"]
    lines = [f"serving: {serving['steps']} steps, up to {serving.get('max_tokens')} tokens a step"]
    for key in SERVING_MAXIMA:
        top = serving.get(f"max_{key}")
        if top is not None:
            lines.append(
                f"  most {key.removesuffix('_mib')}: {top[key]} MiB (first step {first[key]}) at a step of "
                f"{top['tokens']} tokens; then reserved {top['reserved_mib']}, allocated {top['allocated_mib']}, "
                f"inactive {top['inactive_split_mib']}, outside PyTorch {top['outside_torch_mib']}"
            )
    return lines


def render(summaries: Sequence[Mapping[str, Any]]) -> str:
    lines: list[str] = []
    for s in summaries:
        lines.append(f"== {s['server']} (pid {s['pid']})")
        lines.append("non-torch growth since the snapshot, at each call's exit:")
        for row in s["non_torch"]:
            lines.append(
                f"  {row['call']}#{row['index']}: {row['growth_mib']} MiB (stack limit {row['stack_limit_bytes']},"
                f" {row['streams']} streams, {row['threads']} threads)"
            )
        for stream in s["streams"]:
            lines.append(
                f"  stream at {stream['t']} s in {stream['thread']}: {' < '.join(stream['by'][::-1])}"
            )
        for thread in s["threads"]:
            lines.append(f"  thread {thread['name']} ({thread['target']}) at {thread['t']} s")
        for profile in s["profiles"]:
            lines.append(
                f"{profile['call']}: peak +{profile['peak_increase_mib']} MiB, benchmark buffers "
                f"{profile['benchmark_buffers_peak_mib']} MiB, still allocated {profile['still_allocated_mib']} MiB"
            )
            lines.extend(
                f"  {site['mib']:>9} MiB x{site['count']} {site['site']}" for site in profile["at_peak"]
            )
        lines.extend(serving_lines(s["serving"]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("archive", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    summaries = [summary(log, record) for log, record in probes(args.archive)]
    print(render(summaries))
    if args.json:
        args.json.write_text(json.dumps(summaries, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
