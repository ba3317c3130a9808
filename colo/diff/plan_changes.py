"""What changed between two plans, pair by pair: verdict, budget, vLLM flags and probe budgets.

Values are compared as `colo plan --format json` shows them (already rounded), so a change below the
shown precision is not reported: the comment never shows a row whose two sides read the same.
Pairs are matched by name; a renamed pair is one removed and one added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from colo.errors import Problem
from colo.plan.report import plan_view
from colo.plan.stack import Plan
from colo.roles import start_position

ABSENT = "—"  # shown for a value that one side does not have

# (label, key in the pair view) for the GPU the pair runs on
GPU_METRICS = (("predicted free MiB", "predicted_free_mib"),)
# (label, key in the server's memory view); "startup margin" is derived below
SERVER_METRICS = (
    ("model", None),
    ("weights GiB", "weights_gib"),
    ("util", "gpu_memory_utilization"),
    ("max model len", "max_model_len"),
    ("KV GiB", "kv_cache_gib"),
    ("KV tokens", "kv_tokens"),
    ("concurrency", "max_concurrency"),
    ("startup margin GiB", None),
)
STACK_SETTINGS = (
    ("GPU", ("gpu", "name")),
    ("node pool mode", ("node_pool", "mode")),
    ("instance type", ("node_pool", "instance_type")),
    ("GPUs per node", ("node_pool", "gpus_per_node")),
    ("nodes", ("node_pool", "node_count")),
    ("spare GPUs", ("node_pool", "spare_gpus")),
    ("GPU pairing", ("gpu_pairing",)),
    ("ordered start", ("ordered_start",)),
)
POSITIONAL = "(model path)"  # the key of `vllm serve`'s positional argument in a flag diff


@dataclass(frozen=True)
class ValueChange:
    scope: str  # "GPU", a server role, or "" for stack settings
    label: str
    before: str
    after: str
    delta: str  # signed difference when both sides are numbers, else ""


@dataclass(frozen=True)
class FlagChange:
    server: str
    flag: str
    before: str | None  # None: the flag is absent on that side
    after: str | None


@dataclass(frozen=True)
class PairChange:
    name: str
    where_before: str | None  # "node 0 GPU 1"; None when the pair is not on that side
    where_after: str | None
    fits_before: bool | None  # None when the pair is not on that side
    fits_after: bool | None
    budget: tuple[ValueChange, ...]
    flags: tuple[FlagChange, ...]
    probes: tuple[ValueChange, ...]
    problems_before: tuple[Problem, ...]
    problems_after: tuple[Problem, ...]

    @property
    def status(self) -> str:
        if self.fits_before is None:
            return "added"
        if self.fits_after is None:
            return "removed"
        same = self.problems_before == self.problems_after and self.where_before == self.where_after
        return "unchanged" if same and not (self.budget or self.flags or self.probes) else "changed"

    @property
    def verdict(self) -> str | None:
        """How the pair's fit moved, or None when it did not move and still fits (or was removed)."""
        if self.fits_after is None:
            return None
        if not self.fits_after:
            if self.fits_before is None:
                return "new pair does not fit"
            return "stops fitting" if self.fits_before else "still does not fit"
        return "now fits" if self.fits_before is False else None


@dataclass(frozen=True)
class PlanChanges:
    pairs: tuple[PairChange, ...]  # sorted by name
    stack: tuple[ValueChange, ...]
    stack_problems: tuple[Problem, ...]  # the after side's problems that belong to no pair
    after_fits: bool

    @property
    def does_not_fit(self) -> tuple[PairChange, ...]:
        """Pairs that do not fit after the change: those that stopped fitting or are new come first."""
        order = {"stops fitting": 0, "new pair does not fit": 1, "still does not fit": 2}
        failing = [p for p in self.pairs if p.fits_after is False]
        return tuple(sorted(failing, key=lambda p: (order[p.verdict or ""], p.name)))

    @property
    def unchanged(self) -> bool:
        return not self.stack and all(p.status == "unchanged" for p in self.pairs)


@dataclass(frozen=True)
class _PairSide:
    view: dict[str, Any] | None  # None when the pair could not be planned (e.g. an unknown model)
    problems: tuple[Problem, ...]

    @property
    def fits(self) -> bool:
        return self.view is not None and not self.problems

    @property
    def where(self) -> str | None:
        return None if self.view is None else f"node {self.view['node']} GPU {self.view['gpu']}"


def _pair_sides(plan: Plan | None) -> tuple[dict[str, _PairSide], tuple[Problem, ...]]:
    """Each configured pair with the problems whose config path points into it; the rest are stack-wide."""
    if plan is None:
        return {}, ()
    views = {v["name"]: v for v in plan_view(plan)["pairs"]}
    claimed: set[Problem] = set()
    sides: dict[str, _PairSide] = {}
    for index, pair in enumerate(plan.config.pairs):
        prefix = f"colo:pairs[{index}]"
        mine = tuple(p for p in plan.problems if p.path == prefix or p.path.startswith(prefix + "."))
        claimed.update(mine)
        sides[pair.name] = _PairSide(views.get(pair.name), mine)
    return sides, tuple(p for p in plan.problems if p not in claimed)


def _text(value: Any) -> str:
    if value is None:
        return ABSENT
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _delta(before: Any, after: Any) -> str:
    numbers = (int, float)
    if isinstance(before, bool) or isinstance(after, bool):
        return ""
    if not (isinstance(before, numbers) and isinstance(after, numbers)):
        return ""
    if isinstance(before, int) and isinstance(after, int):
        return f"{after - before:+d}"
    return f"{round(after - before, 3):+.3f}".rstrip("0").rstrip(".")


def _change(scope: str, label: str, before: Any, after: Any) -> ValueChange | None:
    if _text(before) == _text(after):
        return None
    return ValueChange(scope, label, _text(before), _text(after), _delta(before, after))


def _servers(view: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {} if view is None else {s["role"]: s for s in view["servers"]}


def _server_metric(server: dict[str, Any] | None, label: str, key: str | None) -> Any:
    if server is None:
        return None
    if label == "model":
        return server["model"]
    memory = server["memory"]
    if key is None:  # startup margin: free at start minus what vLLM's check asks for
        return round(memory["startup_free_gib"] - memory["requested_gib"], 2)
    return memory[key]


def _roles(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Start order, which is also how `colo plan` lists the servers."""
    return sorted(set(before) | set(after), key=lambda role: (start_position(role), role))


def _budget(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[ValueChange]:
    rows = [_change("GPU", label, before and before[key], after and after[key]) for label, key in GPU_METRICS]
    servers_before, servers_after = _servers(before), _servers(after)
    for role in _roles(servers_before, servers_after):
        for label, key in SERVER_METRICS:
            rows.append(
                _change(
                    role,
                    label,
                    _server_metric(servers_before.get(role), label, key),
                    _server_metric(servers_after.get(role), label, key),
                )
            )
    return [row for row in rows if row is not None]


def _probes(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[ValueChange]:
    servers_before, servers_after = _servers(before), _servers(after)
    rows = []
    for role in _roles(servers_before, servers_after):
        seconds = [
            (s or {}).get("startup_probe_seconds")
            for s in (servers_before.get(role), servers_after.get(role))
        ]
        rows.append(_change(role, "startup probe s", *seconds))
    return [row for row in rows if row is not None]


def parse_flags(args: list[str]) -> dict[str, str]:
    """`vllm serve` arguments as flag -> value ("" for a bare switch); a repeated flag keeps every value."""
    flags: dict[str, list[str]] = {}
    index = 0
    while index < len(args):
        token = args[index]
        if token.startswith("--"):
            flag, has_value, value = token.partition("=")
            if not has_value and index + 1 < len(args) and not args[index + 1].startswith("--"):
                value = args[index + 1]
                index += 1
            flags.setdefault(flag, []).append(value)
        else:
            flags.setdefault(POSITIONAL, []).append(token)
        index += 1
    return {flag: " ".join(values) for flag, values in flags.items()}


def _flags(before: dict[str, Any] | None, after: dict[str, Any] | None, pair: str) -> list[FlagChange]:
    servers_before, servers_after = _servers(before), _servers(after)
    changes = []
    for role in _roles(servers_before, servers_after):
        old = parse_flags((servers_before.get(role) or {}).get("vllm_args", []))
        new = parse_flags((servers_after.get(role) or {}).get("vllm_args", []))
        for flag in sorted(set(old) | set(new)):
            if old.get(flag) != new.get(flag):
                changes.append(FlagChange(f"{pair}-{role}", flag, old.get(flag), new.get(flag)))
    return changes


def _pair_change(name: str, before: _PairSide | None, after: _PairSide | None) -> PairChange:
    view_before = before.view if before else None
    view_after = after.view if after else None
    return PairChange(
        name=name,
        where_before=before.where if before else None,
        where_after=after.where if after else None,
        fits_before=before.fits if before else None,
        fits_after=after.fits if after else None,
        budget=tuple(_budget(view_before, view_after)),
        flags=tuple(_flags(view_before, view_after, name)),
        probes=tuple(_probes(view_before, view_after)),
        problems_before=before.problems if before else (),
        problems_after=after.problems if after else (),
    )


def _setting(view: dict[str, Any] | None, keys: tuple[str, ...]) -> Any:
    value: Any = view
    for key in keys:
        if value is None:
            return None
        value = value[key]
    return value


def plan_changes(before: Plan | None, after: Plan | None) -> PlanChanges:
    """Compare two plans; `None` is a side where the stack does not exist (every pair is added or removed)."""
    sides_before, _ = _pair_sides(before)
    sides_after, stack_problems = _pair_sides(after)
    pairs = tuple(
        _pair_change(name, sides_before.get(name), sides_after.get(name))
        for name in sorted(set(sides_before) | set(sides_after))
    )
    view_before = plan_view(before) if before else None
    view_after = plan_view(after) if after else None
    stack = [
        _change("", label, _setting(view_before, keys), _setting(view_after, keys))
        for label, keys in STACK_SETTINGS
    ]
    return PlanChanges(
        pairs=pairs,
        stack=tuple(row for row in stack if row is not None),
        stack_problems=stack_problems,
        after_fits=after is not None and after.feasible,
    )
