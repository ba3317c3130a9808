"""`colo verify` output: per server, planned / observed / deviation for each term and a verdict."""

from __future__ import annotations

from typing import Any

from colo.verify.compare import ServerCheck, TermResult, Verdict, overall

VERDICT_TEXT = {
    Verdict.WITHIN: "within tolerance",
    Verdict.PLAN_WRONG: "PLAN WRONG",
    Verdict.UNREADABLE: "NOT READ",
}


def _value(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _decimals(value: object) -> int:
    """The decimals a figure is stated with (0.028 -> 3, 139.19 -> 2, 16 -> 0), at most 4."""
    if not isinstance(value, float):
        return 0
    text = f"{value:.4f}".rstrip("0")
    return len(text.split(".")[1]) if "." in text else 0


def _deviation(result: TermResult) -> str:
    """Observed minus planned, as precise as the figures themselves (a utilization 0.024 -> 0.028 reads
    +0.004, not +0.00), and relative to the planned figure where that means something."""
    deviation, relative = result.deviation, result.relative
    if deviation is None:
        return "-" if result.ok else "differs"
    decimals = max(_decimals(result.planned), _decimals(result.observed))
    text = f"{deviation:+,.{decimals}f}"
    return text + (f" ({relative:+.1%})" if relative is not None and deviation else "")


def _tolerance(result: TermResult) -> str:
    term = result.term
    return term.tolerance.describe(term.unit) if term.tolerance else "equal"


def _with_unit(value: object, unit: str) -> str:
    return f"{_value(value)} {unit}" if unit not in ("", "release", "state") else _value(value)


def _why(check: ServerCheck) -> str:
    off = check.first_off
    if check.unread is not None:
        return check.unread
    if off is None:
        return f"{len(check.results)} terms within tolerance"
    tolerance = _tolerance(off) if off.term.tolerance else "must be equal"
    return (
        f"{off.term.label} is off first: planned {_with_unit(off.planned, off.term.unit)}, observed "
        f"{_with_unit(off.observed, off.term.unit)} ({_deviation(off)}; tolerance {tolerance})"
    )


def check_view(check: ServerCheck) -> dict[str, Any]:
    return {
        "server": check.name,
        "pair": check.pair,
        "role": check.role,
        "source": check.source,
        "verdict": check.verdict.name.lower(),
        "first_off": check.first_off.term.key if check.first_off else None,
        "unread": check.unread,
        "startup_error": check.error,
        "notes": [*check.notes, *([check.device_note] if check.device_note else [])],
        "neighbour_took_more": [finding.view() for finding in check.took_more],
        "terms": [
            {
                "term": r.term.key,
                "label": r.term.label,
                "unit": r.term.unit,
                "planned": r.planned,
                "observed": r.observed,
                "deviation": None if r.deviation is None else round(r.deviation, 4),
                "relative": None if r.relative is None else round(r.relative, 4),
                "tolerance": _tolerance(r),
                "ok": r.ok,
            }
            for r in check.results
        ],
    }


def verify_view(stack: str, checks: list[ServerCheck]) -> dict[str, Any]:
    verdict = overall(checks)
    return {
        "stack": stack,
        "verdict": verdict.name.lower(),
        "exit_code": int(verdict),
        "servers": [check_view(c) for c in checks],
    }


def _rows(check: ServerCheck) -> list[list[str]]:
    return [
        [
            f"{r.term.label} ({r.term.unit})"
            if r.term.unit not in ("", "release", "state")
            else r.term.label,
            _value(r.planned),
            _value(r.observed),
            _deviation(r),
            _tolerance(r),
            "yes" if r.ok else "NO",
        ]
        for r in check.results
    ]


HEADERS = ["term", "planned", "observed", "deviation", "tolerance", "within"]


def _table(rows: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        return [
            "| " + " | ".join(HEADERS) + " |",
            "|" + "---|" * len(HEADERS),
            *("| " + " | ".join(r) + " |" for r in rows),
        ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADERS)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADERS, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    return lines + ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]


def _summary(checks: list[ServerCheck]) -> str:
    verdict = overall(checks)
    if verdict is Verdict.WITHIN:
        return f"verdict: the plan holds: every term of {len(checks)} server(s) is within its tolerance"
    wrong = [c for c in checks if c.verdict is Verdict.PLAN_WRONG]
    unread = [c for c in checks if c.verdict is Verdict.UNREADABLE]
    parts = []
    if wrong:
        first = wrong[0].first_off
        assert first is not None
        parts.append(
            f"the plan was wrong for {len(wrong)} of {len(checks)} server(s); first off: {wrong[0].name} "
            f"{first.term.label}"
        )
    if unread:
        names = ", ".join(c.name for c in unread)
        parts.append(
            f"nothing could be read for {names}" if len(unread) < len(checks) else "nothing could be read"
        )
    return "verdict: " + "; ".join(parts)


def render_text(stack: str, checks: list[ServerCheck], *, markdown: bool) -> str:
    head = "## " if markdown else ""
    lines = [f"{head}colo verify: stack {stack}"]
    said: set[tuple[str, str]] = set()  # (pair, device note) printed: one GPU's total is said once
    for check in checks:
        lines += [
            "",
            f"{'### ' if markdown else ''}{check.name} ({check.source}): {VERDICT_TEXT[check.verdict]}: {_why(check)}",
        ]
        if check.error:
            lines.append(f"startup error logged: {check.error}")
        lines += [f"note: {note}" for note in check.notes]
        if check.device_note and (check.pair, check.device_note) not in said:
            said.add((check.pair, check.device_note))
            lines.append(f"note: {check.device_note}")
        lines += [f"neighbour: {finding.describe()}" for finding in check.took_more]
        if check.results:
            lines += ["", *_table(_rows(check), markdown)]
    lines += ["", _summary(checks)]
    return "\n".join(lines)
