"""`colo plan` as a table: its memory columns add up to each footprint, and each GPU is drawn as a bar."""

from __future__ import annotations

import pytest

from colo.cli import main
from colo.cli.plan_cmd import HEADERS, MEMORY_HEADERS


def _table_rows(out: str) -> list[list[str]]:
    """The rows of every pair's table (columns two or more spaces apart)."""
    rows, lines = [], out.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("server "):
            for row in lines[index + 2 :]:
                if not row.strip():
                    break
                rows.append(row.split())
    return rows


def test_the_memory_columns_add_up_to_the_footprint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "prod"]) == 0
    rows = _table_rows(capsys.readouterr().out)
    assert rows
    first, footprint = HEADERS.index(MEMORY_HEADERS[0]), HEADERS.index("= footprint GiB")
    for row in rows:
        parts = [float(value) for value in row[first:footprint]]
        assert round(sum(parts), 2) == float(row[footprint]), row


def test_the_table_draws_every_gpu_as_a_bar_as_wide_as_the_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "72")
    assert main(["plan", "--stack", "prod"]) == 0
    out = capsys.readouterr().out
    titles = [line for line in out.splitlines() if line.startswith("GPU ") and " of node " in line]
    assert len(titles) == 3
    lines = out.splitlines()
    for title in titles:
        assert len(lines[lines.index(title) + 1]) == 72


def test_json_and_markdown_carry_no_terminal_picture(capsys: pytest.CaptureFixture[str]) -> None:
    for fmt in ("json", "markdown"):
        assert main(["plan", "--stack", "local", "--format", fmt]) == 0
        assert "safety margin  " not in capsys.readouterr().out
