"""Reading a file a user named, with a bound: only regular files, and never more than the caller allows.

A path to `/dev/zero`, a FIFO or a multi-gigabyte file would otherwise be read until memory runs out (or
forever); each is refused before a byte is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

KIB = 1024
MIB = 1024 * KIB


class FileRefused(ValueError):
    """The file is not one colo reads: missing, not a regular file, too large or not text."""


def _size(limit: int) -> str:
    return f"{limit // MIB} MiB" if limit >= MIB else f"{limit // KIB} KiB"


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of a regular file no larger than `limit`; FileRefused (a ValueError) otherwise."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise FileRefused("file not found") from None
    except OSError as exc:
        raise FileRefused(f"cannot read it: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a device, pipe or socket"
        raise FileRefused(f"is {kind}, not a regular file")
    if info.st_size > limit:
        raise FileRefused(f"is {info.st_size} bytes; colo reads files of at most {_size(limit)} here")
    try:
        # O_NONBLOCK: should the path have turned into a FIFO since the check, opening it does not wait.
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise FileRefused(f"cannot read it: {exc.strerror}") from None
    with os.fdopen(descriptor, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileRefused(f"is larger than {_size(limit)}, the most colo reads here")
    return data


def read_head(path: Path, limit: int) -> bytes:
    """At most the first `limit` bytes of a regular file (a server log whose start is what matters, however long
    the server has run); FileRefused for anything that is not a regular file."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise FileRefused(f"cannot read it: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise FileRefused("is not a regular file")
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise FileRefused(f"cannot read it: {exc.strerror}") from None
    with os.fdopen(descriptor, "rb") as handle:
        return handle.read(limit)


def decode_utf8(data: bytes) -> str:
    """Text from UTF-8 bytes (a leading byte-order mark is dropped); FileRefused names the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        raise FileRefused(f"is not UTF-8 text (byte 0x{bad} at offset {exc.start})") from None
