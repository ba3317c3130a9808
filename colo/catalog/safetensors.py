"""Exact weight bytes from safetensors headers, without reading the tensors.

A safetensors file starts with an 8-byte little-endian header length and a JSON header that gives each
tensor's dtype, shape and byte range; summing the ranges gives the exact bytes a checkpoint holds. The same
parser serves local files and ranged S3 reads (only the first 8 + N bytes are fetched).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

MAX_HEADER_BYTES = 100 * 1024 * 1024  # the format's own limit


class SafetensorsError(ValueError):
    pass


def header_length(prefix: bytes) -> int:
    if len(prefix) < 8:
        raise SafetensorsError("file shorter than the 8-byte header length")
    (length,) = struct.unpack("<Q", prefix[:8])
    if length > MAX_HEADER_BYTES:
        raise SafetensorsError(f"header length {length} exceeds the format's 100 MiB limit")
    return int(length)


def parse_header(data: bytes) -> dict[str, Any]:
    """`data` holds at least the 8-byte length and the JSON header."""
    length = header_length(data)
    if len(data) < 8 + length:
        raise SafetensorsError("truncated header")
    try:
        header = json.loads(data[8 : 8 + length])
    except json.JSONDecodeError as exc:
        raise SafetensorsError(f"header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise SafetensorsError("header is not a JSON object")
    return header


def part_of(tensor_name: str) -> str:
    """Which part of the model a tensor belongs to; vLLM skips some parts depending on flags."""
    name = tensor_name.lower()
    if "mtp" in name or "nextn" in name:
        return "mtp"
    if any(key in name for key in ("visual", "vision_tower", "vision_model", "multi_modal_projector")):
        return "vision"
    if "lm_head" in name:
        return "lm_head"
    return "model"


def tensor_bytes_by_part(headers: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for header in headers:
        for name, info in header.items():
            if name == "__metadata__":
                continue
            start, end = info["data_offsets"]
            part = part_of(name)
            totals[part] = totals.get(part, 0) + int(end) - int(start)
    return totals


def read_local_headers(directory: Path) -> list[dict[str, Any]]:
    headers = []
    for path in sorted(directory.glob("*.safetensors")):
        if not path.is_file():  # a FIFO or device would block or never end
            raise SafetensorsError(f"{path} is not a regular file")
        with path.open("rb") as handle:
            prefix = handle.read(8)
            length = header_length(prefix)
            headers.append(parse_header(prefix + handle.read(length)))
    return headers
