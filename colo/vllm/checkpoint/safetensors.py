"""Exact weight bytes from safetensors headers, without reading the tensors.

A safetensors file starts with an 8-byte little-endian header length and a JSON header that gives each
tensor's dtype, shape and byte range; summing the ranges gives the exact bytes a checkpoint holds. The same
parser serves local files and ranged S3 reads (only the first 8 + N bytes are fetched).
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from colo.files import read_bounded

MAX_HEADER_BYTES = 100 * 1024 * 1024  # the format's own limit
MAX_INDEX_BYTES = 64 * 1024 * 1024  # the index of a trillion-parameter checkpoint is a few megabytes
INDEX_FILE = "model.safetensors.index.json"
LAYER_INDEX = re.compile(r"^(?:model\.)?(?:language_model\.)?(?:model\.)?layers\.(\d+)\.")
# Tensors only a DeepSeek/GLM-style MTP layer carries (enorm, hnorm, eh_proj, shared_head): they mark its index.
MTP_ONLY = re.compile(r"\.(enorm|hnorm|eh_proj|shared_head)\.")


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


def layer_index(tensor_name: str) -> int | None:
    match = LAYER_INDEX.match(tensor_name)
    return int(match.group(1)) if match else None


def part_of(tensor_name: str, mtp_layers: frozenset[int] = frozenset()) -> str:
    """Which part of the model a tensor belongs to; vLLM skips some parts depending on flags. MTP layers are
    named `mtp.*` (Qwen3-Next/3.5), or are decoder layers past the last one (DeepSeek-V3/R1, GLM-4.5:
    `model.layers.{num_hidden_layers + i}`, `vllm 0.14.0 model_executor/models/deepseek_v2.py::
    get_spec_layer_idx_from_weight_name`), which vLLM skips unless speculative decoding loads them."""
    name = tensor_name.lower()
    if "mtp" in name or "nextn" in name or layer_index(tensor_name) in mtp_layers:
        return "mtp"
    if any(key in name for key in ("visual", "vision_tower", "vision_model", "multi_modal_projector")):
        return "vision"
    if "lm_head" in name:
        return "lm_head"
    return "model"


def mtp_layer_indices(names: Iterable[str], num_hidden_layers: int | None = None) -> frozenset[int]:
    """Decoder-numbered MTP layers: every index from `num_hidden_layers` on when the config is known, else the
    layers that carry an MTP-only tensor."""
    indices: set[int] = set()
    for name in names:
        index = layer_index(name)
        if index is None:
            continue
        if (num_hidden_layers is not None and index >= num_hidden_layers) or MTP_ONLY.search(name):
            indices.add(index)
    return frozenset(indices)


def tensor_bytes_by_part(
    headers: Iterable[Mapping[str, Any]], num_hidden_layers: int | None = None
) -> dict[str, int]:
    """Exact tensor bytes by part (model, lm_head, mtp, vision)."""
    tensors = [
        (name, int(info["data_offsets"][1]) - int(info["data_offsets"][0]))
        for header in headers
        for name, info in header.items()
        if name != "__metadata__"
    ]
    if not tensors:
        return {}
    mtp = mtp_layer_indices((name for name, _ in tensors), num_hidden_layers)
    totals: dict[str, int] = {"mtp": 0}  # headers list every tensor: no MTP tensor means no MTP bytes
    for name, size in tensors:
        part = part_of(name, mtp)
        totals[part] = totals.get(part, 0) + size
    return totals


def read_index(directory: Path) -> dict[str, Any] | None:
    """model.safetensors.index.json: `metadata.total_size` is the tensors' exact bytes, `weight_map` their names."""
    path = directory / INDEX_FILE
    if not path.exists():
        return None
    try:
        index = json.loads(read_bounded(path, MAX_INDEX_BYTES))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise SafetensorsError(f"{INDEX_FILE} is not JSON: {exc}") from None
    if not isinstance(index, dict) or "total_size" not in (index.get("metadata") or {}):
        raise SafetensorsError(f"{INDEX_FILE} has no metadata.total_size")
    return index


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
