"""Model architectures colo knows without reading a checkpoint (models.yaml): each entry's config.json keys,
side files and exact checkpoint bytes, with its source. colo.vllm.checkpoint reads them as vLLM would."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from colo.catalog.data import parse_yaml

SIDE_FILES = ("hf_quant_config.json", "quantize_config.json")  # quantization blocks beside config.json


@dataclass(frozen=True)
class CatalogModel:
    """One models.yaml entry with its `base:` chain resolved."""

    model_id: str
    source: str
    config: dict[str, Any]  # config.json keys, a base's merged under this entry's
    side_files: dict[str, Any]  # file name (SIDE_FILES) -> its JSON content
    checkpoint_bytes: int | None  # model.safetensors.index.json total_size, where a public copy gave it
    gated: bool
    # the pooling modes its sentence-transformers Pooling config sets true (colo.vllm.checkpoint.pooling's
    # names, of a sentence_transformers.models.Pooling module, which every release reads alike); None: the entry
    # records none, and vLLM takes the model class's default
    declared_pooling: tuple[str, ...] | None = None


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
    data = parse_yaml(resources.files("colo.catalog").joinpath("models.yaml").read_text())
    return {entry["id"]: entry for entry in data["models"]}


def _resolved_config(model_id: str) -> dict[str, Any]:
    entry = _entries()[model_id]
    config: dict[str, Any] = dict(entry.get("config") or {})
    if "base" in entry:
        config = _merge(_resolved_config(entry["base"]), config)
    return config


def is_gated(model_id: str) -> bool:
    """Whether downloading the model from the Hub needs an accepted licence and a token."""
    known = catalog_id(model_id)
    entry = _entries().get(known) if known else None
    return bool(entry and entry.get("gated"))


def catalog_ids() -> list[str]:
    return sorted(_entries())


@cache
def _by_folded_id() -> dict[str, str]:
    return {model_id.lower(): model_id for model_id in _entries()}


def catalog_id(model_id: str) -> str | None:
    """The catalog's spelling of `model_id`, matched as the Hub matches repository ids (case-insensitively)."""
    return _by_folded_id().get(model_id.lower())


def catalog_model(model_id: str) -> CatalogModel:
    """The entry for `model_id`; KeyError when the catalog lacks it."""
    entry = _entries()[model_id]
    exact = entry.get("checkpoint_bytes")
    return CatalogModel(
        model_id=model_id,
        source=str(entry["source"]),
        config=_resolved_config(model_id),
        side_files={name: entry[key] for name in SIDE_FILES if (key := name.removesuffix(".json")) in entry},
        checkpoint_bytes=int(exact) if exact else None,
        gated=bool(entry.get("gated")),
        declared_pooling=tuple(entry["pooling"]) if "pooling" in entry else None,
    )
