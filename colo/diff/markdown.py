"""The PR comment: verdict changes first, then per-pair budget, flags and probes, then Kubernetes objects.

Byte-stable by construction: no timestamps, and every list arrives sorted, so a workflow that re-runs
the diff on a new push rewrites the same sticky comment only when something really moved.
"""

from __future__ import annotations

from collections.abc import Sequence

from colo.diff.objects import ObjectChanges
from colo.diff.plan_changes import ABSENT, FlagChange, PairChange, PlanChanges, ValueChange
from colo.errors import Problem

MAX_FIELDS = 12  # changed field paths listed per object before "and N more"


def marker(stack: str) -> str:
    """The hidden line a workflow searches for to find and update its own comment."""
    return f"<!-- colo-diff:{stack} -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(rows: Sequence[ValueChange], first: str) -> list[str]:
    """Rows with a scope (GPU, a server role) get a leading column for it; stack settings have none."""
    scoped = any(r.scope for r in rows)
    head = f"| {first} | | before | after | change |" if scoped else f"| {first} | before | after | change |"
    out = [head, "|---" * (5 if scoped else 4) + "|"]
    for r in rows:
        cells = [r.scope, r.label] if scoped else [r.label]
        out.append("| " + " | ".join(_cell(c) for c in [*cells, r.before, r.after, r.delta]) + " |")
    return out


def _problems(problems: Sequence[Problem]) -> list[str]:
    return [f"- `{p.path}`: {p.message}" for p in problems]


def _flags(changes: Sequence[FlagChange]) -> list[str]:
    out = ["```diff"]
    server = None
    for change in changes:
        if change.server != server:
            server = change.server
            out.append(f"@@ {server} @@")
        if change.before is not None:
            out.append(f"- {change.flag} {change.before}".rstrip())
        if change.after is not None:
            out.append(f"+ {change.flag} {change.after}".rstrip())
    return [*out, "```"]


def _probe(row: ValueChange) -> str:
    if row.before == ABSENT:
        return f"- `{row.scope}`: {row.after} s (new)"
    if row.after == ABSENT:
        return f"- `{row.scope}`: {row.before} s (removed)"
    return f"- `{row.scope}`: {row.before} s → {row.after} s ({row.delta})"


def _where(pair: PairChange) -> str:
    before, after = pair.where_before, pair.where_after
    if before and after and before != after:
        return f"{before} → {after}"
    return after or before or "not placed"


def _fit(value: bool | None) -> str:
    return ABSENT if value is None else "fits" if value else "does not fit"


def _pair_section(pair: PairChange) -> list[str]:
    head = f"#### `{pair.name}` ({_where(pair)}): {pair.status}"
    if pair.verdict:
        head += f", {pair.verdict}"
    elif pair.status == "changed":
        head += ", still fits"
    out = [head, ""]
    if pair.budget:
        out += [*_table(pair.budget, "server"), ""]
    if pair.flags:
        out += ["vLLM flags:", "", *_flags(pair.flags), ""]
    if pair.probes:
        out += ["Startup probe budgets:", ""]
        out += [_probe(p) for p in pair.probes]
        out.append("")
    if pair.problems_before != pair.problems_after and pair.fits_after and pair.problems_before:
        out += ["Problems on the base side, now resolved:", "", *_problems(pair.problems_before), ""]
    return out


def _does_not_fit(changes: PlanChanges) -> list[str]:
    failing = changes.does_not_fit
    if not failing and not changes.stack_problems:
        return []
    out = ["### ⚠️ does not fit", ""]
    for pair in failing:
        out += [
            f"#### `{pair.name}` ({_where(pair)}): {pair.verdict}",
            "",
            *_problems(pair.problems_after),
            "",
        ]
    if changes.stack_problems:
        out += ["#### stack settings", "", *_problems(changes.stack_problems), ""]
    return out


def _objects(objects: ObjectChanges | str) -> list[str]:
    out = ["### Kubernetes objects", ""]
    if isinstance(objects, str):
        return [*out, f"Not compared: {objects}.", ""]
    if objects.empty:
        return [*out, "No change to the Kubernetes objects.", ""]
    out += [f"- added `{key}`" for key in objects.added]
    out += [f"- removed `{key}`" for key in objects.removed]
    for change in objects.changed:
        shown = ", ".join(f"`{f}`" for f in change.fields[:MAX_FIELDS])
        more = len(change.fields) - MAX_FIELDS
        out.append(f"- changed `{change.key}`: {shown}" + (f" and {more} more" if more > 0 else ""))
    return [*out, ""]


def _does_not_fit_summary(changes: PlanChanges) -> str:
    failing = len(changes.does_not_fit)
    what = f"{failing} pair{'s' if failing != 1 else ''}" if failing else "the stack"
    verb = "do" if failing > 1 else "does"
    return f"⚠️ {what} {verb} not fit"


def _summary(changes: PlanChanges, objects: ObjectChanges | str) -> str:
    if not changes.after_fits:
        return _does_not_fit_summary(changes)
    if changes.unchanged and (isinstance(objects, str) or objects.empty):
        return "✅ nothing changes"
    moved = [p for p in changes.pairs if p.status != "unchanged"]
    counts = {s: sum(1 for p in moved if p.status == s) for s in ("changed", "added", "removed")}
    parts = [f"{n} {s}" for s, n in counts.items() if n]
    return "✅ fits; pairs: " + (", ".join(parts) if parts else "no change")


def render(stack: str, base: str, head: str, changes: PlanChanges, objects: ObjectChanges | str) -> str:
    """The whole comment. `objects` is a reason string when the objects could not be compared."""
    out = [
        marker(stack),
        f"## colo diff `{stack}`: {_summary(changes, objects)}",
        "",
        f"Base: `{base}`. Head: `{head}`.",
        "",
    ]
    out += _does_not_fit(changes)
    if changes.stack:
        out += ["### Stack", "", *_table(changes.stack, "setting"), ""]
    moved = [p for p in changes.pairs if p.status != "unchanged"]
    if moved:
        out += ["### Pairs", ""]
        for pair in moved:
            out += _pair_section(pair)
    same = [p for p in changes.pairs if p.status == "unchanged"]
    if same:
        out += ["### Unchanged", ""]
        out += [f"- `{p.name}` ({_where(p)}): no change, {_fit(p.fits_after)}" for p in same]
        out.append("")
    if changes.unchanged and (isinstance(objects, str) or objects.empty):
        out += ["Nothing changes: the plan is the same on both sides.", ""]
    out += _objects(objects)
    return "\n".join(out).rstrip("\n") + "\n"


def render_invalid(stack: str, side: str, source: str, problems: Sequence[Problem]) -> str:
    """The comment when one side's config does not even validate: nothing was planned."""
    lines = [
        marker(stack),
        f"## colo diff `{stack}`: ❌ invalid config on the {side} side",
        "",
        f"`{source}` could not be read or does not validate, so nothing was planned:",
        "",
        *_problems(problems),
    ]
    return "\n".join(lines) + "\n"
