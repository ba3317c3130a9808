"""Regenerate every block of README.md and docs/*.md that quotes what colo prints, so no figure drifts.

    python scripts/update-readme.py          # rewrite the blocks in place
    python scripts/update-readme.py --check  # exit 1 naming each stale block (tests/test_readme.py runs it)

A block sits between `<!-- generated: NAME -->` and `<!-- end: NAME -->`; NAME is one of GENERATORS below,
each the output of a colo command run in this process exactly as the text around it shows it (at a terminal
of WIDTH columns), so that when the memory model changes, one command brings every quoted figure along.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from colo.cli import main as colo  # noqa: E402 (the repository's colo, not an installed one)
from colo.cli.common import load_config  # noqa: E402
from colo.plan.stack import make_plan  # noqa: E402
from colo.stackfiles import load_stack  # noqa: E402

WIDTH = 100  # the terminal the quoted outputs were printed at
FILES = ("README.md", "docs/accuracy.md", "docs/commands.md", "docs/architecture.md")
BLOCK = re.compile(
    r"(<!-- generated: (?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- end: (?P=name) -->)", re.S
)
VERIFY_RUN = "bench/gpu/results/2026-12-02-h200-dense"


@contextlib.contextmanager
def _terminal(cwd: Path = ROOT) -> Iterator[None]:
    """A UTF-8 terminal WIDTH columns wide, in `cwd`."""
    before, columns = Path.cwd(), os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)
        if columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = columns


def run_colo(*argv: str, cwd: Path = ROOT) -> str:
    """What `colo ARGV` prints on a UTF-8 stdout (stderr's progress lines are not part of the quote)."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
    quiet = contextlib.redirect_stderr(io.StringIO())
    # argparse's exits (--help, a bad flag) end a quote too
    with _terminal(cwd), contextlib.redirect_stdout(out), quiet, contextlib.suppress(SystemExit):
        colo(list(argv))
    out.flush()
    return raw.getvalue().decode("utf-8")


def _fenced(text: str, command: str | None = None) -> str:
    lines = [f"$ {command}"] if command else []
    return "```\n" + "\n".join([*lines, text.rstrip("\n")]) + "\n```\n"


def plan_local() -> str:
    return _fenced(run_colo("plan", "--stack", "local"), "colo plan --stack local")


def first_edit() -> str:
    """The README's first stack edit: the local stack with a context past its LLM's, as `colo plan` refuses it."""
    stack = (ROOT / "stacks" / "Pulumi.local.yaml").read_text()
    assert "maxModelLen: 32768" in stack, (
        "the local stack's LLM context moved: update the README's first edit"
    )
    with tempfile.TemporaryDirectory() as scratch:
        edited = Path(scratch) / "Pulumi.local.yaml"
        edited.write_text(stack.replace("maxModelLen: 32768", "maxModelLen: 65536", 1))
        printed = run_colo("plan", "--config", str(edited))
    return _fenced(printed[printed.index("PROBLEMS:") :])


def estimate_example() -> str:
    argv = ("estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "L40S", "--max-model-len", "32768")
    return _fenced(run_colo(*argv), "colo " + " ".join(argv))


def verify_example() -> str:
    """One server's shipped log against the flags it ran with, the logs unpacked into run/ as the README says."""
    with tempfile.TemporaryDirectory() as scratch:
        place = Path(scratch)
        for name in ("bench", "stacks", "Pulumi.yaml"):
            (place / name).symlink_to(ROOT / name)
        with tarfile.open(ROOT / f"{VERIFY_RUN}-logs.tar.gz") as archive:
            archive.extractall(place / "run", filter="data")
        argv = (
            "verify",
            "--config",
            "bench/gpu/stacks/Pulumi.h200-dense.yaml",
            "--log",
            "run/logs/dense-llm.log",
            "--server",
            "dense/llm",
            "--plan",
            f"{VERIFY_RUN}-records.json",
        )
        unpack = f"mkdir -p run && tar xzf {VERIFY_RUN}-logs.tar.gz -C run"
        return _fenced(run_colo(*argv, cwd=place), f"{unpack}\n$ colo {' '.join(argv)}")


def pack_field_report() -> str:
    argv = ("pack", "--models", "packs/field-report.yaml", "--alternatives", "2")
    printed = re.sub(
        r" planned in [0-9.]+ s", " planned", run_colo(*argv), count=1
    )  # the one figure that is a time
    return _fenced(printed, "colo " + " ".join(argv))


def _llms(stack: str) -> list[tuple[str, float, int]]:
    """(server, utilization, startup probe seconds) of every LLM the stack plans."""
    plan = make_plan(load_config(load_stack(stack, ROOT)))
    return [
        (server.name, server.memory_plan.budget.spec.utilization, server.probe.startup_seconds)
        for pair in plan.pairs
        for server in pair.servers
        if server.role == "llm"
    ]


def field_report_utilizations() -> str:
    """The field report's first pair (prod's qwen27b) as colo derives it."""
    plan = make_plan(load_config(load_stack("prod", ROOT)))
    figures = " + ".join(f"{s.memory_plan.budget.spec.utilization:g}" for s in plan.pairs[0].servers)
    return (
        f"For the field report's pairs colo derives {figures} (embedding + LLM, `colo plan --stack prod`).\n"
    )


def prod_probes() -> str:
    probes = ", ".join(f"{name} {seconds} s" for name, _, seconds in _llms("prod"))
    return f"`colo plan --stack prod` gives its LLMs startup probe budgets of {probes}.\n"


def accuracy_headline() -> str:
    """bench/accuracy.py's public-log campaign: its counts line and its headline table."""
    printed = subprocess.run(
        [sys.executable, "bench/accuracy.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    lines = printed.splitlines()
    start = lines.index("== public startup logs (bench/data/vllm_startup_logs.yaml)")
    counts = lines[start + 1]
    table_start = lines.index("Headline (logs that informed no constant):", start) + 1
    table = []
    for line in lines[table_start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    return f"`python bench/accuracy.py` prints: {counts}.\n\n" + "\n".join(table) + "\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "plan-local": plan_local,
    "first-edit": first_edit,
    "estimate-example": estimate_example,
    "verify-example": verify_example,
    "pack-field-report": pack_field_report,
    "field-report-utilizations": field_report_utilizations,
    "prod-probes": prod_probes,
    "accuracy-headline": accuracy_headline,
}


def pictures() -> dict[Path, str]:
    """The SVG files the README shows: the local stack's GPU, as `colo render` writes it."""
    from colo.plan.budget_bars import svg_files

    plan = make_plan(load_config(load_stack("local", ROOT)))
    return {ROOT / "docs" / "pictures" / f"local-{name}": text for name, text in svg_files(plan, "").items()}


def regenerate(text: str, outputs: dict[str, str]) -> str:
    return BLOCK.sub(lambda m: m.group(1) + outputs[m.group("name")] + m.group(4), text)


def stale_blocks() -> tuple[dict[Path, str], list[str]]:
    """Every file with its blocks regenerated, and `file: block` for each that changed."""
    outputs: dict[str, str] = {}
    updated: dict[Path, str] = {}
    stale: list[str] = []
    for name in FILES:
        path = ROOT / name
        text = path.read_text()
        for match in BLOCK.finditer(text):
            block = match.group("name")
            if block not in GENERATORS:
                raise SystemExit(f"{name}: no generator for block {block}")
            if block not in outputs:
                outputs[block] = GENERATORS[block]()
            if match.group("body") != outputs[block]:
                stale.append(f"{name}: {block}")
        updated[path] = regenerate(text, outputs)
    for path, text in pictures().items():
        if not path.is_file() or path.read_text() != text:
            stale.append(str(path.relative_to(ROOT)))
        updated[path] = text
    return updated, stale


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 naming each stale block")
    args = parser.parse_args()
    updated, stale = stale_blocks()
    if args.check:
        for block in stale:
            print(f"stale: {block} (run python scripts/update-readme.py)")
        return 1 if stale else 0
    for path, text in updated.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for block in stale:
        print(f"regenerated {block}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
