"""Which host CPUs a server's processes (and the load generator) may run on: the host side of two servers
sharing one GPU, apart from the GPU side.

A server starts on the CPUs its spec names (`cpus: "0-9"`), else on every CPU the runner had when it started,
so a runner that pinned itself does not pin the servers it starts. A `pin` action moves a running server's
every process and thread (vLLM's API server, its engine core and their threads), or the runner's own threads
(the load generator's threads are created later, from them), to other CPUs mid-run.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path


def parse_cpus(text: str) -> frozenset[int]:
    """`"0-9,12,14-15"` as Linux lists CPUs (cpuset, taskset -c)."""
    cpus: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        low, high = int(first), int(last or first)
        if high < low:
            raise ValueError(f"CPU range {part} ends before it starts")
        cpus.update(range(low, high + 1))
    if not cpus:
        raise ValueError(f"no CPU in {text!r}")
    return frozenset(cpus)


def cores(sysfs: Path = Path("/sys/devices/system/cpu")) -> list[frozenset[int]]:
    """The machine's physical cores, each as the CPUs (hardware threads) it runs, in the order Linux numbers their
    first CPU: on a host with SMT two CPUs of one core share its execution units, so a host-side split must not
    cut through a core."""
    by_core: dict[tuple[str, str], set[int]] = {}
    for entry in sorted(sysfs.glob("cpu[0-9]*"), key=lambda e: int(e.name[3:])):
        topology = entry / "topology"
        with contextlib.suppress(OSError):
            key = (
                (topology / "physical_package_id").read_text().strip(),
                (topology / "core_id").read_text().strip(),
            )
            by_core.setdefault(key, set()).add(int(entry.name[3:]))
    return sorted((frozenset(c) for c in by_core.values()), key=min)


def resolve(text: str, machine_cores: list[frozenset[int]] | None = None) -> frozenset[int]:
    """A spec's CPUs: a CPU list (`"0-9"`), or `"cores:0-4"`, every CPU of physical cores 0 to 4 as `cores()`
    orders them (so a split holds whether or not the machine has SMT, and however it numbers the siblings)."""
    if not text.startswith("cores:"):
        return parse_cpus(text)
    known = cores() if machine_cores is None else machine_cores
    wanted = parse_cpus(text.removeprefix("cores:"))
    missing = sorted(i for i in wanted if i >= len(known))
    if missing:
        raise ValueError(f"{text}: the machine has {len(known)} physical cores (0-{len(known) - 1})")
    return frozenset(cpu for i in wanted for cpu in known[i])


def format_cpus(cpus: Iterable[int]) -> str:
    ordered = sorted(cpus)
    ranges: list[str] = []
    start = prev = ordered[0]
    for cpu in [*ordered[1:], None]:
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        ranges.append(str(start) if start == prev else f"{start}-{prev}")
        if cpu is not None:
            start = prev = cpu
    return ",".join(ranges)


def threads(pid: int) -> list[int]:
    """The thread ids of process `pid` (its main thread's id is the pid)."""
    with contextlib.suppress(OSError):
        return [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir() if t.name.isdigit()]
    return []


def pin(pids: Iterable[int], cpus: frozenset[int]) -> dict[str, int]:
    """Every thread of each process onto `cpus`; how many threads each process had moved (a thread that ended
    meanwhile is skipped)."""
    moved: dict[str, int] = {}
    for pid in sorted(pids):
        count = 0
        for tid in threads(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.sched_setaffinity(tid, cpus)
                count += 1
        moved[str(pid)] = count
    return moved
