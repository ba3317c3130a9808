"""The README a newcomer reads in ten minutes: short, with a table of contents, every link alive, and every
block that quotes colo's output exactly what the code prints today (scripts/update-readme.py regenerates them)."""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

import pytest

from colo.cli import COMMANDS
from tests.paths import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = ("docs/accuracy.md", "docs/configuration.md", "docs/components.md", "docs/testing.md")
DOCS += ("docs/architecture.md", "docs/commands.md")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _script() -> ModuleType:
    path = REPO_ROOT / "scripts" / "update-readme.py"
    spec = importlib.util.spec_from_file_location("update_readme", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_is_short_enough_to_read_in_ten_minutes() -> None:
    assert len(README.read_text().splitlines()) <= 300


def test_the_table_of_contents_lists_every_section_and_every_entry_resolves() -> None:
    text = README.read_text()
    headings = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    contents = re.findall(r"^- \[[^\]]+\]\(#([^)]+)\)$", text, re.M)
    assert contents == [_anchor(h) for h in headings]


@pytest.mark.parametrize("name", ["README.md", *DOCS])
def test_every_relative_link_points_at_a_file_that_exists(name: str) -> None:
    path = REPO_ROOT / name
    for target in LINK.findall(path.read_text()):
        if target.startswith(("http://", "https://", "#", "mailto:")):
            continue
        file = (path.parent / target.split("#", 1)[0]).resolve()
        assert file.exists(), f"{name} links to {target}, which does not exist"


def test_the_readme_shows_every_command() -> None:
    text = README.read_text()
    for name in COMMANDS:
        assert f"colo {name}" in text, name


def test_every_quoted_output_is_what_colo_prints_today() -> None:
    """When the memory model moves, `python scripts/update-readme.py` brings every quoted figure along."""
    _, stale = _script().stale_blocks()
    assert not stale, f"stale blocks, run python scripts/update-readme.py: {stale}"


def test_every_generated_block_has_a_generator_and_a_closing_marker() -> None:
    script = _script()
    for name in script.FILES:
        text = (REPO_ROOT / name).read_text()
        opened = re.findall(r"<!-- generated: ([a-z0-9-]+) -->", text)
        closed = re.findall(r"<!-- end: ([a-z0-9-]+) -->", text)
        assert opened == closed, name
        assert set(opened) <= set(script.GENERATORS), name
    assert set(script.GENERATORS) <= {
        block
        for name in script.FILES
        for block in re.findall(r"<!-- generated: ([a-z0-9-]+) -->", (REPO_ROOT / name).read_text())
    }
