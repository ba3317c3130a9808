"""A catalog model's architecture: colo.catalog's models.yaml entry, read as vLLM would read its config.json."""

from __future__ import annotations

from functools import cache

from colo.catalog.models import catalog_model
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.files import with_declared_pooling, with_total_size
from colo.vllm.checkpoint.hf_config import from_hf_config


@cache
def catalog_architecture(model_id: str) -> ModelArchitecture:
    """KeyError when the catalog has no entry for `model_id`."""
    entry = catalog_model(model_id)
    arch = from_hf_config(entry.config, model_id, source=entry.source, side_files=entry.side_files)
    arch = with_declared_pooling(arch, entry.declared_pooling)
    return with_total_size(arch, entry.checkpoint_bytes) if entry.checkpoint_bytes else arch
