"""uv.lock as data, and the uv release it pins (a test dependency), for the toolchain tests."""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from tests.paths import REPO_ROOT

LOCK = REPO_ROOT / "uv.lock"


def uv_binary() -> Path:
    """The uv the test extra installs next to the interpreter running the tests."""
    found = shutil.which("uv", path=str(Path(sys.executable).parent))
    assert found, "uv is missing from the test environment: run `make test`, which syncs uv.lock"
    return Path(found)


def locked_packages(lock: Path = LOCK) -> dict[str, set[str]]:
    """Each locked package's canonical name -> its locked versions (one per resolution fork)."""
    data: dict[str, Any] = tomllib.loads(lock.read_text())
    versions: dict[str, set[str]] = {}
    for package in data["package"]:
        versions.setdefault(canonicalize_name(package["name"]), set()).add(package["version"])
    return versions
