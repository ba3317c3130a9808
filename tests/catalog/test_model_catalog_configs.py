"""Every catalog model is a config vLLM would load: read through the path a Hub config.json takes, and
written the way vLLM reads it (the keys it requires, module names it matches whole).

The catalog's models.yaml keeps each model's config.json keys. Written out as a config.json (and the index's
total_size where the catalog has it), each must read back through colo's file and Hub path
(colo.vllm.checkpoint.files.architecture_from_path) to the same architecture the catalog gives, and vLLM's
own refusals apply to it (an FP8 block without activation_scheme is refused, as Fp8Config.from_config
refuses it). Where an ignore list is matched by whole module name (fp8: quant_utils.py::is_layer_skipped),
every name in it must be a module vLLM builds: a short name such as `linear_attn.in_proj_a` skips nothing.
And a vision tower vLLM builds under the checkpoint's quantization must be listed module by module: vLLM
quantizes every tower linear the list does not name, and a block-FP8 linear whose width no 128-block divides
fails at the first forward (Qwen3.6-27B-FP8's 4304-wide vision MLP on the H100 run of 2026-12-07).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from colo.catalog.models import catalog_ids, catalog_model
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.checkpoint.files import architecture_from_path
from colo.vllm.checkpoint.quant_matching import VISION_PREFIXES, ModuleRef, module_format, text_name
from colo.vllm.checkpoint.quant_methods import quant_release
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
    if entry.declared_pooling is not None:  # the sentence-transformers files that declare it
        pooling = {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}
        (directory / "modules.json").write_text(json.dumps([pooling]))
        (directory / "1_Pooling").mkdir()
        keys = {
            "LAST": "pooling_mode_lasttoken",
            "MEAN": "pooling_mode_mean_tokens",
            "CLS": "pooling_mode_cls_token",
        }
        modes = {keys[name]: True for name in entry.declared_pooling}
        (directory / "1_Pooling" / "config.json").write_text(json.dumps(modes))
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
    # a Gated DeltaNet layer's conv1d is a linear vLLM builds without the quantization config (vllm 0.34.0
    # layers/mamba/gdn/qwen_gdn_linear_attn.py: ColumnParallelLinear(prefix=f"{prefix}.conv1d")), not sized by colo
    names |= {name.rsplit(".", 1)[0] + ".conv1d" for name in names if ".linear_attn." in name}
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


# Qwen3-VL-style towers (Qwen3-VL, Qwen3.5, Qwen3.6) are built with the model's quantization config, every linear
# named as below (vllm 0.34.0 models/qwen3_vl.py: Qwen3_VisionBlock attn/mlp, Qwen3_VisionMLP linear_fc1/2,
# Qwen3_VisionPatchMerger, deepstack_merger_list; models/qwen2_5_vl.py: Qwen2_5_VisionAttention qkv/proj). The
# checkpoint spells them `model.visual.*`, and vLLM maps the list the same way before matching
# (fp8.py::Fp8Config.apply_vllm_mapper with Qwen3VLForConditionalGeneration.hf_to_vllm_mapper).
QWEN_VL_ARCHITECTURES = (
    "Qwen3VLForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration",
)
# Gemma 4 builds its tower from transformers' modules up to 0.22 (models/gemma4_mm.py), never quantized; from
# 0.25 `_get_tower_quant_config` quantizes it only where hidden and intermediate sizes are multiples of 64.
GEMMA4_ARCHITECTURES = ("Gemma4ForConditionalGeneration",)
TOWER_QUANT_MULTIPLE = 64


def _qwen_vl_tower_linears(vision: dict[str, object]) -> list[str]:
    depth = int(str(vision["depth"]))
    blocks = [
        f"model.visual.blocks.{i}.{part}"
        for i in range(depth)
        for part in ("attn.qkv", "attn.proj", "mlp.linear_fc1", "mlp.linear_fc2")
    ]
    deepstack = vision.get("deepstack_visual_indexes") or []
    assert isinstance(deepstack, list)
    mergers = [
        f"model.visual.deepstack_merger_list.{j}.linear_fc{k}" for j in range(len(deepstack)) for k in (1, 2)
    ]
    return [*blocks, "model.visual.merger.linear_fc1", "model.visual.merger.linear_fc2", *mergers]


def _towers_of_exact_match_checkpoints() -> list[str]:
    return [
        model_id
        for model_id in catalog_ids()
        if "vision_config" in catalog_model(model_id).config
        and catalog_architecture(model_id).quant_scheme.method in EXACT_MATCH_METHODS
    ]


@pytest.mark.parametrize("model_id", _towers_of_exact_match_checkpoints())
@pytest.mark.parametrize("version", ["0.22.0", "0.34.0"])
def test_every_fp8_vision_tower_stays_unquantized_as_vllm_builds_it(model_id: str, version: str) -> None:
    config = catalog_model(model_id).config
    vision = config["vision_config"]
    architecture = config["architectures"][0]
    if architecture in GEMMA4_ARCHITECTURES:
        sizes = (vision["hidden_size"], vision["intermediate_size"])
        assert any(size % TOWER_QUANT_MULTIPLE for size in sizes), (
            f"{model_id}: vLLM 0.25+ would quantize its tower"
        )
        return
    assert architecture in QWEN_VL_ARCHITECTURES, (
        f"{model_id}: how vLLM builds a {architecture} tower is not known"
    )
    scheme = catalog_architecture(model_id).quant_scheme
    release = quant_release(version)
    quantized = [
        name
        for name in _qwen_vl_tower_linears(vision)
        if module_format(scheme, ModuleRef(name), release) is not None
    ]
    assert quantized == [], f"{model_id}: vLLM quantizes these tower linears, which its list does not name"


def test_a_list_without_the_vision_blocks_leaves_the_tower_quantized() -> None:
    scheme = catalog_architecture("Qwen/Qwen3.6-27B-FP8").quant_scheme
    text_only = replace(scheme, ignore=tuple(e for e in scheme.ignore if ".visual." not in e))
    release = quant_release("0.34.0")
    assert module_format(scheme, ModuleRef("model.visual.blocks.0.mlp.linear_fc1"), release) is None
    assert module_format(text_only, ModuleRef("model.visual.blocks.0.mlp.linear_fc1"), release) is not None


def test_the_qwen36_27b_fp8_list_is_qwens_259_names() -> None:
    ignore = catalog_architecture("Qwen/Qwen3.6-27B-FP8").quant_scheme.ignore
    assert len(ignore) == len(set(ignore)) == 259
    assert list(ignore) == sorted(ignore)  # as the published config writes it
    assert {"mtp.fc", "model.visual.pos_embed", "model.language_model.layers.62.linear_attn.conv1d"} <= set(
        ignore
    )
    assert "model.language_model.layers.3.linear_attn.in_proj_a" not in ignore  # layer 3 is full attention
