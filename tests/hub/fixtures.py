"""The public repositories under tests/hub_files as the local Hub serves them, with the commits and gates that
tests/hub_files/SOURCES.yaml records (a snapshot whose copy names no commit gets a stable one of its own)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from colo.catalog.data import parse_yaml
from tests.hub.server import Content, HubRepo, Snapshot, commit_of
from tests.paths import REPO_ROOT

HUB_FILES = REPO_ROOT / "tests" / "hub_files"
COMMIT = re.compile(r"\b[0-9a-f]{40}\b")
ACCESS_TOKEN = "hf_colo_tests_access"  # what the local Hub accepts for its gated repositories


@cache
def sources() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = parse_yaml((HUB_FILES / "SOURCES.yaml").read_text())["models"]
    return data


def _files(directory: Path) -> dict[str, Content]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def _commit(recorded: Any, files: dict[str, Content]) -> str:
    """The recorded Hub commit (SOURCES.yaml writes one as the sha, or as `main = <sha>`), else a stable one."""
    found = COMMIT.search(recorded) if isinstance(recorded, str) else None
    return found.group(0) if found else commit_of(files)


def public_repo(repo_id: str) -> HubRepo:
    """One repository of tests/hub_files: main, and any branch kept in a `<repo>@<branch>` directory."""
    entry = sources()[repo_id]
    files = _files(HUB_FILES / repo_id)
    main = _commit(entry.get("hub_revision"), files)
    snapshots = {main: Snapshot(main, files)}
    refs = {"main": main}
    for branch in entry.get("revisions") or {}:
        other = _files(HUB_FILES / f"{repo_id}@{branch}")
        commit = commit_of(other)
        snapshots[commit] = Snapshot(commit, other)
        refs[branch] = commit
    return HubRepo(repo_id, snapshots, refs, gated=entry.get("gated") is True)


def public_repos() -> list[HubRepo]:
    return [public_repo(repo_id) for repo_id in sorted(sources())]
