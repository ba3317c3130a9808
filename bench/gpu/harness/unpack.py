"""Join an archive's parts, check every sha256 the manifest gives, and extract it (GPU machine side).

    python3 -m harness.unpack MANIFEST.json PARTS_DIR TARGET ARCHIVE [ARCHIVE ...]

Parts arrive over several calls; each call copies its part into PARTS_DIR first. An archive whose parts are
not all there, or whose bytes differ from the manifest, is not extracted and the command fails.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MIB = 1024**2


class UnpackError(RuntimeError):
    pass


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(MIB), b""):
            digest.update(block)
    return digest.hexdigest()


def join(entry: Mapping[str, Any], parts_dir: Path, joined: Path) -> Path:
    """The archive rebuilt from its parts in order, each part and the whole checked."""
    missing = [p["file"] for p in entry["parts"] if not (parts_dir / p["file"]).is_file()]
    if missing:
        raise UnpackError(f"{entry['file']}: parts not here yet: {', '.join(missing)}")
    for part in entry["parts"]:
        actual = _sha256(parts_dir / part["file"])
        if actual != part["sha256"]:
            raise UnpackError(f"{part['file']}: sha256 {actual} differs from the manifest's {part['sha256']}")
    with joined.open("wb") as out:
        for part in entry["parts"]:
            out.write((parts_dir / part["file"]).read_bytes())
    actual = _sha256(joined)
    if actual != entry["sha256"]:
        joined.unlink()
        raise UnpackError(
            f"{entry['file']}: joined sha256 {actual} differs from the manifest's {entry['sha256']}"
        )
    return joined


def extract(archive: Path, target: Path) -> int:
    """Members under `target`; a member naming a path outside it is refused."""
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:xz") as tar:
        tar.extractall(target, filter="data")
        return len(tar.getnames())


def unpack(manifest: Mapping[str, Any], parts_dir: Path, target: Path, names: list[str]) -> dict[str, int]:
    counts = {}
    for name in names:
        entry = manifest["archives"][name]
        archive = join(entry, parts_dir, parts_dir / entry["file"])
        counts[name] = extract(archive, target)
        archive.unlink()
    return counts


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    manifest = json.loads(Path(args[0]).read_text())
    try:
        counts = unpack(manifest, Path(args[1]), Path(args[2]), args[3:])
    except UnpackError as exc:
        print(f"unpack: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"extracted": counts}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
