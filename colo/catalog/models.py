"""Model architectures: colo's catalog, or a config.json (file, model directory) read from disk."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from colo.catalog.architecture import ArchitectureError, ModelArchitecture
from colo.catalog.hf_config import from_hf_config
from colo.catalog.safetensors import read_index, read_local_headers, tensor_bytes_by_part
from colo.files import MIB, decode_utf8, read_bounded

MAX_CONFIG_BYTES = 4 * MIB  # config.json files of real checkpoints are tens of kilobytes
SIDE_FILES = ("hf_quant_config.json", "quantize_config.json")  # quantization blocks beside config.json


def _merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


@cache
def _entries() -> dict[str, dict[str, Any]]:
    data = yaml.safe_load(resources.files("colo.catalog").joinpath("models.yaml").read_text())
    return {entry["id"]: entry for entry in data["models"]}


def _resolved_config(model_id: str) -> dict[str, Any]:
    entry = _entries()[model_id]
    config: dict[str, Any] = dict(entry.get("config") or {})
    if "base" in entry:
        config = _merge(_resolved_config(entry["base"]), config)
    return config


def is_gated(model_id: str) -> bool:
    """Whether downloading the model from the Hub needs an accepted licence and a token."""
    entry = _entries().get(model_id)
    return bool(entry and entry.get("gated"))


def catalog_ids() -> list[str]:
    return sorted(_entries())


@cache
def catalog_architecture(model_id: str) -> ModelArchitecture:
    entries = _entries()
    if model_id not in entries:
        raise KeyError(model_id)
    entry = entries[model_id]
    side_files = {name: entry[key] for name in SIDE_FILES if (key := name.removesuffix(".json")) in entry}
    arch = from_hf_config(
        _resolved_config(model_id), model_id, source=str(entry["source"]), side_files=side_files
    )
    exact = entry.get("checkpoint_bytes")
    if exact:
        arch = _with_total_size(arch, int(exact))
    return arch


def _from_config(
    raw: Any, model_id: str, source: str, side_files: Mapping[str, Mapping[str, Any]] | None = None
) -> ModelArchitecture:
    """from_hf_config on a mapping read from a user's file: a value of the wrong shape (a string where a
    number or an object belongs, zero heads) is an ArchitectureError naming the file, not a crash."""
    if not isinstance(raw, Mapping):
        raise ArchitectureError(f"{source} does not hold a JSON object")
    try:
        return from_hf_config(raw, model_id, source=source, side_files=side_files)
    except (TypeError, AttributeError, KeyError, IndexError, ZeroDivisionError, OverflowError) as exc:
        raise ArchitectureError(
            f"{source} is not shaped like a Hugging Face config.json ({type(exc).__name__}: {str(exc)[:80]})"
        ) from None


def parse_config_json(data: bytes) -> Any:
    """The JSON value of a config.json's bytes (at most MAX_CONFIG_BYTES); ValueError when it is not JSON."""
    if len(data) > MAX_CONFIG_BYTES:
        raise ValueError(f"larger than {MAX_CONFIG_BYTES // MIB} MiB, which no config.json is")
    try:
        return json.loads(decode_utf8(data))
    except RecursionError:
        raise ValueError("nested too deeply to be a config.json") from None


def _with_total_size(arch: ModelArchitecture, total: int) -> ModelArchitecture:
    """Exact tensor bytes from an index's total_size: the untied lm_head (kept in the model dtype by every method
    colo sizes) is its own part because embedding servers do not load it; any MTP layers are inside `model`,
    and the estimate takes their geometry out when they are not loaded."""
    lm_head = 0 if arch.tie_word_embeddings else arch.vocab_size * arch.hidden_size * arch.dtype_bytes
    parts = {"model": total - lm_head, "lm_head": lm_head}
    return replace(arch, checkpoint_bytes=total, checkpoint_bytes_by_part=parts)


def _side_files(directory: Path) -> dict[str, Any]:
    return {
        name: parse_config_json(read_bounded(directory / name, MAX_CONFIG_BYTES))
        for name in SIDE_FILES
        if (directory / name).exists()
    }


def architecture_from_path(path: Path, model_id: str) -> ModelArchitecture:
    """A config.json file, or a model directory holding config.json (and *.safetensors for exact bytes)."""
    config_file = path / "config.json" if path.is_dir() else path
    raw = parse_config_json(read_bounded(config_file, MAX_CONFIG_BYTES))
    arch = _from_config(raw, model_id, str(config_file), _side_files(config_file.parent))
    if not path.is_dir():
        return arch
    headers = read_local_headers(path)
    if headers:
        parts = _tensor_bytes(headers, arch.num_layers, str(path))
        return replace(arch, checkpoint_bytes=sum(parts.values()), checkpoint_bytes_by_part=parts)
    index = read_index(path)  # configs downloaded without the weights: the index still gives the exact total
    return _with_total_size(arch, int(index["metadata"]["total_size"])) if index else arch


def _tensor_bytes(headers: list[dict[str, Any]], layers: int, source: str) -> dict[str, int]:
    try:
        return tensor_bytes_by_part(headers, layers)
    except (TypeError, KeyError, ValueError) as exc:
        raise ArchitectureError(
            f"a safetensors header in {source} lists a tensor without byte offsets"
        ) from exc


def architecture_from_mapping(
    raw: Mapping[str, Any], model_id: str, source: str, parts: Mapping[str, int] | None = None
) -> ModelArchitecture:
    """A config.json already read (from S3, say), with tensor bytes by part when headers were read."""
    arch = _from_config(raw, model_id, source=source)
    if parts:
        arch = replace(arch, checkpoint_bytes=sum(parts.values()), checkpoint_bytes_by_part=dict(parts))
    return arch
