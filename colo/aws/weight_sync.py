"""Copy a model from an S3 prefix into a directory, so that a server only ever sees a complete copy.

    python -m colo.aws.weight_sync [--verify] s3://bucket/models/qwen3-8b/ /models/<pair>/<role>

- Idempotent: the published directory carries a completion marker listing every object's size and ETag
  as verified when it was copied. A re-run trusts that marker: when S3's listing still matches it and every
  file has its recorded size, nothing is downloaded or re-hashed (a restart costs one listing, not a read
  of the whole checkpoint). `--verify` re-hashes every file of the published copy against S3's checksum
  and fetches again the ones that differ.
- Resumable at any point: work happens in a staging directory beside the target that records what is
  already verified. A download lands in `<file>.part` and continues with a Range GET pinned to the same
  ETag; unchanged files of the published copy are hard-linked in (atomically, under a temporary name) and
  recorded; leftovers of an interrupted run are removed before publishing; a publish cut short between its
  two renames is completed by the next run.
- Verified: every downloaded file is checked against S3's SHA-256 checksum when the object has one, else its
  ETag (MD5, or the multipart MD5-of-MD5s), before it counts as staged.
- Atomic: the staging directory is renamed into place only when every file is verified and the marker is
  written, so the target either does not exist, or is a previous complete copy, or is the new one.

Exit status: 0 copied or already up to date; 1 the copy failed (nothing published); 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from colo.aws.clients import client
from colo.aws.s3_integrity import mismatch, remote_integrity
from colo.model_volume import COMPLETE_MARKER  # written last; servers start only when it exists
from colo.s3_uri import S3Prefix, parse_s3_prefix

STAGING_STATE = ".colo-staging.json"
PART_SUFFIX = ".part"
LINK_SUFFIX = ".link"  # a hard link being made, renamed over its final name once complete
STREAM_CHUNK = 8 * 1024 * 1024

Log = Callable[[str], None]


class SyncError(RuntimeError):
    pass


@dataclass(frozen=True)
class RemoteFile:
    name: str  # path below the prefix
    key: str
    size: int
    etag: str

    @property
    def record(self) -> dict[str, Any]:
        return {"size": self.size, "etag": self.etag}


@dataclass(frozen=True)
class SyncResult:
    downloaded: tuple[str, ...]
    reused: tuple[str, ...]
    up_to_date: bool


def staging_dir(target: Path) -> Path:
    return target.with_name(f"{target.name}.partial")


def retired_dir(target: Path) -> Path:
    """Where the previous copy goes while the new one is renamed into place."""
    return target.with_name(f"{target.name}.replaced")


def list_remote(s3: Any, where: S3Prefix) -> list[RemoteFile]:
    files: list[RemoteFile] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=where.bucket, Prefix=where.prefix):
        for obj in page.get("Contents", []):
            name = obj["Key"][len(where.prefix) :]
            if not name or name.endswith("/"):
                continue  # folder placeholders some tools create
            if ".." in Path(name).parts or name.startswith("/"):
                raise SyncError(f"refusing key {obj['Key']}: it would land outside the target directory")
            files.append(RemoteFile(name, obj["Key"], int(obj["Size"]), str(obj["ETag"]).strip('"')))
    return sorted(files, key=lambda f: f.name)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def _matches(directory: Path, record: dict[str, Any] | None, remote: RemoteFile) -> bool:
    local = directory / remote.name
    return record == remote.record and local.is_file() and local.stat().st_size == remote.size


def _download(s3: Any, bucket: str, remote: RemoteFile, part: Path, resume: bool, log: Log) -> None:
    offset = part.stat().st_size if resume and part.exists() else 0
    if offset > remote.size:
        offset = 0
    if offset == remote.size:
        return
    request: dict[str, Any] = {"Bucket": bucket, "Key": remote.key, "IfMatch": f'"{remote.etag}"'}
    if offset:
        log(f"resuming {remote.name} at byte {offset} of {remote.size}")
        request["Range"] = f"bytes={offset}-"
    body = s3.get_object(**request)["Body"]
    with part.open("ab" if offset else "wb") as handle:
        while block := body.read(STREAM_CHUNK):
            handle.write(block)
        handle.flush()
        os.fsync(handle.fileno())


def _stage_file(
    s3: Any, bucket: str, remote: RemoteFile, staging: Path, state: dict[str, Any], log: Log
) -> None:
    final = staging / remote.name
    part = final.with_name(final.name + PART_SUFFIX)
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = state.setdefault("partial", {})
    resume = partial.get(remote.name) == remote.etag
    partial[remote.name] = remote.etag
    _write_json(staging / STAGING_STATE, state)
    _download(s3, bucket, remote, part, resume, log)
    problem = mismatch(part, remote_integrity(s3, bucket, remote.key))
    if problem is not None:
        part.unlink()
        del partial[remote.name]
        _write_json(staging / STAGING_STATE, state)
        raise SyncError(
            f"s3://{bucket}/{remote.key} failed verification ({problem}); the partial copy was discarded, "
            f"nothing was published. If it happens again the object in S3 is damaged: upload it anew"
        )
    os.replace(part, final)
    del partial[remote.name]
    state.setdefault("verified", {})[remote.name] = remote.record
    _write_json(staging / STAGING_STATE, state)


def _intact(s3: Any, bucket: str, directory: Path, remote: RemoteFile) -> bool:
    """Re-hash one local file against what S3 reports for its object."""
    return mismatch(directory / remote.name, remote_integrity(s3, bucket, remote.key)) is None


def _reuse(published: Path, staging: Path, name: str) -> None:
    """Hard-link an unchanged published file into the staging directory (a copy where links fail).

    Made under a temporary name and renamed over the final one, so an interrupted run leaves either
    nothing or a complete link; a staged file that already is the published one is left alone."""
    source, copy = published / name, staging / name
    copy.parent.mkdir(parents=True, exist_ok=True)
    if copy.exists() and os.path.samefile(source, copy):
        return
    temporary = copy.with_name(copy.name + LINK_SUFFIX)
    temporary.unlink(missing_ok=True)
    try:
        os.link(source, temporary)  # same filesystem: no bytes copied
    except OSError:
        shutil.copy2(source, temporary)
    os.replace(temporary, copy)


def _prune(staging: Path, names: set[str]) -> None:
    """Remove what an interrupted run left behind (temporary files, objects no longer listed), so that only
    the listed files and the marker are published."""
    keep = names | {STAGING_STATE, COMPLETE_MARKER}
    for path in sorted(staging.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        relative = path.relative_to(staging).as_posix()
        if path.is_dir() and not path.is_symlink():
            if not any(path.iterdir()):
                path.rmdir()
        elif relative not in keep:
            path.unlink()


def _publish(staging: Path, target: Path) -> None:
    """Swap the staged copy in. Between the two renames the target is briefly absent, never partial; a
    run interrupted there leaves the staged copy complete, and the next run publishes it."""
    retired = retired_dir(target)
    shutil.rmtree(retired, ignore_errors=True)
    if target.exists():
        os.rename(target, retired)
    os.rename(staging, target)
    shutil.rmtree(retired, ignore_errors=True)


def _staging_state(staging: Path, where: S3Prefix) -> dict[str, Any]:
    """What an earlier run of the same source verified in `staging`; an empty staging directory otherwise.

    The staged marker is written only once every file is verified, so where the state file is gone (the run
    stopped between writing the marker and publishing) the marker's records stand for it."""
    staging.mkdir(parents=True, exist_ok=True)
    state = _read_json(staging / STAGING_STATE)
    if state.get("source") == str(where):
        return state
    staged = _read_json(staging / COMPLETE_MARKER)
    if staged.get("source") == str(where) and isinstance(staged.get("files"), dict):
        return {"source": str(where), "verified": dict(staged["files"])}
    shutil.rmtree(staging)
    staging.mkdir(parents=True)
    return {"source": str(where)}


def _published_intact(
    s3: Any, where: S3Prefix, target: Path, published: dict[str, Any], remote: list[RemoteFile], verify: bool
) -> set[str]:
    """Names of the published files that may be reused: recorded with the same size and ETag, present with
    that size, and, with `verify`, re-hashed to S3's checksum."""
    if published.get("source") != str(where):
        return set()
    records = published.get("files", {})
    return {
        f.name
        for f in remote
        if _matches(target, records.get(f.name), f) and (not verify or _intact(s3, where.bucket, target, f))
    }


def _check_listing(where: S3Prefix, remote: list[RemoteFile]) -> None:
    if not remote:
        raise SyncError(f"no objects under {where}: check weightsUri and that the model was uploaded there")
    if not any(f.name == "config.json" for f in remote):
        raise SyncError(f"{where} holds no config.json, so it is not a model directory vLLM can load")


@dataclass(frozen=True)
class _Update:
    """One run's inputs for filling the staging directory."""

    s3: Any
    where: S3Prefix
    target: Path
    staging: Path
    intact: set[str]  # published files that may be reused
    verify: bool
    log: Log


def _fill_staging(
    run: _Update, remote: list[RemoteFile], state: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """Stage every listed file: keep what an earlier run verified, link what the published copy holds
    unchanged, download the rest. Returns (downloaded, reused)."""
    verified: dict[str, Any] = state.setdefault("verified", {})
    downloaded: list[str] = []
    reused: list[str] = []
    for remote_file in remote:
        name = remote_file.name
        staged = _matches(run.staging, verified.get(name), remote_file)
        if staged and (not run.verify or _intact(run.s3, run.where.bucket, run.staging, remote_file)):
            reused.append(name)
        elif name in run.intact:
            _reuse(run.target, run.staging, name)
            verified[name] = remote_file.record
            _write_json(run.staging / STAGING_STATE, state)
            reused.append(name)
        else:
            run.log(f"copying {name} ({remote_file.size} bytes)")
            _stage_file(run.s3, run.where.bucket, remote_file, run.staging, state, run.log)
            downloaded.append(name)
    return downloaded, reused


def sync(source: str, target: Path, *, s3: Any = None, log: Log = print, verify: bool = False) -> SyncResult:
    where = parse_s3_prefix(source)
    s3 = s3 or client("s3")
    remote = list_remote(s3, where)
    _check_listing(where, remote)
    listing = {f.name: f.record for f in remote}
    if target.exists() and retired_dir(target).exists():  # a run stopped before removing the previous copy
        shutil.rmtree(retired_dir(target))
    published = _read_json(target / COMPLETE_MARKER)
    intact = _published_intact(s3, where, target, published, remote, verify)
    if published.get("files") == listing and intact == set(listing):
        checked = "re-hashed" if verify else "sizes match the marker; --verify re-hashes"
        log(f"{target} already holds {where} ({len(remote)} files, {checked}); nothing to do")
        return SyncResult((), tuple(listing), up_to_date=True)

    staging = staging_dir(target)
    state = _staging_state(staging, where)
    run = _Update(s3, where, target, staging, intact, verify, log)
    downloaded, reused = _fill_staging(run, remote, state)
    _prune(staging, set(listing))
    _write_json(staging / COMPLETE_MARKER, {"source": str(where), "files": listing})
    (staging / STAGING_STATE).unlink(missing_ok=True)
    _publish(staging, target)
    log(f"published {where} at {target}: {len(downloaded)} copied, {len(reused)} already present")
    return SyncResult(tuple(downloaded), tuple(reused), up_to_date=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m colo.aws.weight_sync", description=__doc__.split("\n")[0]
    )
    parser.add_argument("source", help="s3://bucket/prefix/ holding config.json and the weights")
    parser.add_argument("target", type=Path, help="directory to publish the copy at, e.g. /models/chat/llm")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="re-hash the published copy against S3's checksums instead of trusting its marker",
    )
    args = parser.parse_args(argv)
    try:
        sync(args.source, args.target, verify=args.verify)
    except (SyncError, ValueError) as exc:
        print(f"weight sync failed: {exc}", file=sys.stderr)
        return 1
    except ClientError as exc:
        error = exc.response.get("Error", {})
        print(f"weight sync failed: {error.get('Code')}: {error.get('Message', exc)}", file=sys.stderr)
        return 1
    except BotoCoreError as exc:
        print(f"weight sync failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
