"""A directory colo writes as a whole: never a file it did not write, and never half a directory.

The directory keeps a record of what colo wrote there (RECORD: each file's path and SHA-256). colo writes
into a directory only when it is new, empty, or holds exactly what the record lists, unedited; anything
else is refused, naming what is in the way. The new content is written into a staging directory beside
the target first and swapped in only once all of it is there, so a failed run leaves the previous
content as it was.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
from collections.abc import Mapping
from pathlib import Path

from colo.errors import Problem, UsageError

RECORD = ".colo-render.json"
SHOWN = 5  # entries named in a refusal; the rest are counted


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _recorded(directory: Path) -> dict[str, str] | None:
    """The record's path -> SHA-256, or None when the directory holds no record colo can read."""
    try:
        record = json.loads((directory / RECORD).read_text())
    except (OSError, ValueError):
        return None
    files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        return None
    return {str(path): digest for path, digest in files.items()}


def _entries(directory: Path) -> list[str]:
    """Every file, directory and link below `directory`, as POSIX paths relative to it."""
    return sorted(path.relative_to(directory).as_posix() for path in directory.rglob("*"))


def _listed(names: list[str]) -> str:
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


def _not_colos(directory: Path, entries: list[str], recorded: dict[str, str]) -> list[str]:
    """What colo may not remove: entries it did not write, and files changed since it wrote them."""
    parents = {parent.as_posix() for path in recorded for parent in Path(path).parents}
    found: list[str] = []
    for name in entries:
        path = directory / name
        if name == RECORD or (name in parents and path.is_dir() and not path.is_symlink()):
            continue
        if name not in recorded or path.is_symlink() or not path.is_file():
            found.append(name)
        elif _sha256(path.read_bytes()) != recorded[name]:
            found.append(f"{name} (edited since colo wrote it)")
    return found


def check_replaceable(directory: Path, flag: str) -> None:
    """Refuse, naming `flag` and what is in the way, unless colo may replace `directory` whole."""
    if not directory.exists():
        return
    if not directory.is_dir():
        raise UsageError([Problem(f"{flag} {directory}", "is a file, not a directory")])
    entries = _entries(directory)
    if not entries:
        return
    recorded = _recorded(directory)
    if recorded is None:
        raise UsageError(
            [
                Problem(
                    f"{flag} {directory}",
                    f"is not empty and colo did not write it (there is no {RECORD}): it holds "
                    f"{_listed(entries)}. colo never deletes or overwrites files it did not write; choose a "
                    f"new or empty directory",
                )
            ]
        )
    strangers = _not_colos(directory, entries, recorded)
    if strangers:
        raise UsageError(
            [
                Problem(
                    f"{flag} {directory}",
                    f"holds what colo did not write there: {_listed(strangers)}. colo never deletes or "
                    f"overwrites them; move them elsewhere, or choose a new or empty directory",
                )
            ]
        )


def _fresh_sibling(directory: Path, purpose: str) -> Path:
    """An unused name beside `directory` (same filesystem, so a rename moves it whole)."""
    while True:
        candidate = directory.with_name(f".{directory.name}.colo-{purpose}-{secrets.token_hex(4)}")
        if not candidate.exists():
            return candidate


def _stage(staging: Path, files: Mapping[str, str]) -> None:
    staging.mkdir()
    digests: dict[str, str] = {}
    for name, text in sorted(files.items()):
        path = staging / name
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode()
        path.write_bytes(data)
        digests[name] = _sha256(data)
    record = {"written_by": "colo render", "files": digests}
    (staging / RECORD).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def _swap_in(staging: Path, directory: Path) -> None:
    if not directory.exists():
        staging.rename(directory)
        return
    if not any(directory.iterdir()):  # empty: fill it in place, so a working directory stays where it is
        for entry in staging.iterdir():
            entry.rename(directory / entry.name)
        return
    previous = _fresh_sibling(directory, "old")
    directory.rename(previous)
    staging.rename(directory)
    shutil.rmtree(previous)  # colo's own files only: check_replaceable saw to that


def replace_directory(directory: Path, files: Mapping[str, str], *, flag: str = "--out") -> None:
    """Make `directory` hold exactly `files` (relative POSIX path -> text) and the record of them."""
    directory = directory.resolve()
    check_replaceable(directory, flag)
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        staging = _fresh_sibling(directory, "new")
        try:
            _stage(staging, files)
            _swap_in(staging, directory)
        finally:
            if staging.exists():
                shutil.rmtree(staging)
    except OSError as exc:
        raise UsageError([Problem(f"{flag} {directory}", f"cannot be written: {exc}")]) from None
