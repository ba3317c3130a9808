"""A project and a package index that a test builds for itself, so uv can resolve with no network and no cache.

uv's `lock --check` re-resolves whenever pyproject.toml no longer matches the lock, and a resolution needs
every package's metadata. Read from PyPI or uv's cache, that makes a test pass or fail with the machine's
cache; read from wheels written here (a flat `find-links` directory, `no-index`), it is the same everywhere.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Sequence
from pathlib import Path

# name -> versions published in the fixture index; the fixture project depends on both names.
PUBLISHED: dict[str, tuple[str, ...]] = {"alpha": ("1.0", "1.1"), "beta": ("1.0",)}
DEPENDENCIES: tuple[str, ...] = ("alpha>=1.0", "beta>=1.0")


def write_wheel(into: Path, name: str, version: str) -> Path:
    """A minimal, valid pure-Python wheel: one empty module, METADATA, WHEEL and a RECORD with hashes."""
    dist = f"{name}-{version}"
    files = {
        f"{name}/__init__.py": b"",
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: colo-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    path = into / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for member, data in files.items():
            wheel.writestr(member, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{member},sha256={digest},{len(data)}")
        record.append(f"{dist}.dist-info/RECORD,,")
        wheel.writestr(f"{dist}.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def pyproject_text(dependencies: Sequence[str]) -> str:
    quoted = ", ".join(f'"{requirement}"' for requirement in dependencies)
    return (
        '[project]\nname = "fixture"\nversion = "0"\nrequires-python = ">=3.11"\n'
        f"dependencies = [{quoted}]\n\n"
        '[tool.uv]\nfind-links = ["../wheels"]\nno-index = true\n'
    )


def fixture_project(root: Path) -> Path:
    """root/wheels (the index) and root/project (its pyproject.toml); returns the project directory."""
    wheels = root / "wheels"
    wheels.mkdir(parents=True)
    for name, versions in PUBLISHED.items():
        for version in versions:
            write_wheel(wheels, name, version)
    project = root / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(pyproject_text(DEPENDENCIES))
    return project
