"""Every catalog model is a config vLLM would load: read through the path a Hub config.json takes, and
written the way vLLM reads it (the keys it requires, module names it matches whole).

The catalog's models.yaml keeps each model's config.json keys. Written out as a config.json (and the index's
total_size where the catalog has it), each must read back through colo's file and Hub path
(colo.vllm.checkpoint.files.architecture_from_path) to the same architecture the catalog gives, and vLLM's
own refusals apply to it (an FP8 block without activation_scheme is refused, as Fp8Config.from_config
refuses it). Where an ignore list is matched by whole module name (fp8: quant_utils.py::is_layer_skipped),
every name in it must be a module vLLM builds: a short name such as `linear_attn.in_proj_a` skips nothing.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from colo.catalog.models import catalog_ids, catalog_model
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.checkpoint.files import architecture_from_path
from colo.vllm.checkpoint.quant_matching import VISION_PREFIXES, text_name
from colo.vllm.process.weight_modules import module_inventory

EXACT_MATCH_METHODS = ("fp8",)
BUILT_OUTSIDE_THE_LAYERS = {"lm_head", "model.embed_tokens", "model.norm"}


def _as_hub_copy(model_id: str, directory: Path) -> Path:
    entry = catalog_model(model_id)
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(entry.config))
    if entry.checkpoint_bytes:
        index = {"metadata": {"total_size": entry.checkpoint_bytes}, "weight_map": {}}
        (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    for name, content in entry.side_files.items():
        (directory / name).write_text(json.dumps(content))
    return directory


@pytest.mark.parametrize("model_id", catalog_ids())
def test_every_catalog_entry_reads_as_its_config_json_reads_through_the_hub_path(
    model_id: str, tmp_path: Path
) -> None:
    from_files = architecture_from_path(_as_hub_copy(model_id, tmp_path / "model"), model_id)
    from_catalog = catalog_architecture(model_id)
    assert replace(from_files, source="") == replace(from_catalog, source="")


def _module_names(model_id: str) -> set[str]:
    arch = catalog_architecture(model_id)
    inv = module_inventory(arch, tensor_parallel_size=1, pooling=False, load_mtp=True)
    names = {linear.module.prefix for linear in inv.linears}
    names |= {shard for linear in inv.linears for shard in linear.module.shards}
    names |= {stack.module.prefix for stack in inv.experts}
    return names | BUILT_OUTSIDE_THE_LAYERS


@pytest.mark.parametrize("model_id", catalog_ids())
def test_ignore_lists_matched_by_whole_name_name_modules_vllm_builds(model_id: str) -> None:
    scheme = catalog_architecture(model_id).quant_scheme
    if scheme.method not in EXACT_MATCH_METHODS:
        return
    known = _module_names(model_id)
    unmatched = [
        entry
        for entry in scheme.ignore
        if text_name(entry) not in known
        and not any(part in entry for part in VISION_PREFIXES)
        and not entry.startswith("mtp.")
    ]
    assert unmatched == [], f"{model_id}: vLLM matches these by whole name, and no module is named so"


def test_a_short_name_in_an_fp8_ignore_list_is_caught() -> None:
    assert "model.layers.0.linear_attn.in_proj_a" in _module_names("Qwen/Qwen3.6-27B")
    assert "linear_attn.in_proj_a" not in _module_names("Qwen/Qwen3.6-27B")
