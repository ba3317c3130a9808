"""colo's own record of what it read from the Hub and huggingface_hub does not cache: where a revision pointed, a
commit's file listing, and its safetensors headers. With huggingface_hub's file cache it lets a model planned once
be planned again with no request, and offline.

Laid out like huggingface_hub's cache, under HF_HOME/colo/hub: `models--org--name/refs/<revision>` holds a commit,
`models--org--name/<commit>/listing.json` and `headers.json` what that commit holds. Every file is written whole
(a temporary file renamed into place) and read with a bound.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from colo.files import MIB, FileRefused, decode_utf8, read_bounded

MAX_RECORD_BYTES = 256 * MIB  # the headers of a trillion-parameter checkpoint are tens of megabytes


@dataclass(frozen=True)
class Listing:
    """A commit of a repository as the Hub listed it."""

    repo_id: str  # the Hub's own spelling of the id
    commit: str
    files: tuple[str, ...]
    gated: bool


def repo_folder(repo_id: str) -> str:
    return "models--" + repo_id.replace("/", "--")


class HubRecord:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _read(self, path: Path) -> Any:
        try:
            return json.loads(decode_utf8(read_bounded(path, MAX_RECORD_BYTES)))
        except (OSError, FileRefused, ValueError):
            return None  # absent, or not what colo wrote: read again from the Hub

    def _write(self, path: Path, value: Any) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(handle, "w") as out:
            json.dump(value, out)
        os.replace(temporary, path)

    def _ref(self, repo_id: str, revision: str) -> Path:
        return self.root / repo_folder(repo_id.lower()) / "refs" / quote(revision, safe="")

    def commit_of(self, repo_id: str, revision: str) -> str | None:
        """The commit `revision` pointed to when colo last read it (ids are matched as the Hub matches them)."""
        value = self._read(self._ref(repo_id, revision))
        return value if isinstance(value, str) else None

    def listing(self, repo_id: str, commit: str) -> Listing | None:
        value = self._read(self.root / repo_folder(repo_id.lower()) / commit / "listing.json")
        if not isinstance(value, dict):
            return None
        try:
            return Listing(
                str(value["repo_id"]), str(value["commit"]), tuple(value["files"]), bool(value["gated"])
            )
        except (KeyError, TypeError):
            return None

    def remember(self, asked_id: str, revision: str, listing: Listing) -> None:
        folder = self.root / repo_folder(listing.repo_id.lower())
        self._write(
            folder / listing.commit / "listing.json", {**listing.__dict__, "files": list(listing.files)}
        )
        self._write(self._ref(asked_id, revision), listing.commit)

    def headers(self, listing: Listing) -> list[dict[str, Any]] | str | None:
        """The commit's safetensors headers; a string: why the Hub could not give them (recorded once, since a
        commit's files never change); None: not read yet."""
        value = self._read(self.root / repo_folder(listing.repo_id.lower()) / listing.commit / "headers.json")
        if isinstance(value, dict) and isinstance(value.get("unreadable"), str):
            return str(value["unreadable"])
        return value if isinstance(value, list) else None

    def remember_headers(self, listing: Listing, headers: list[dict[str, Any]] | str) -> None:
        value = {"unreadable": headers} if isinstance(headers, str) else headers
        self._write(self.root / repo_folder(listing.repo_id.lower()) / listing.commit / "headers.json", value)
