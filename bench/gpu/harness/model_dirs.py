"""Model directories vLLM loads with `--load-format dummy`: config.json from colo's catalog, a word-level tokenizer.

Dummy loading initialises every parameter at random, so "Model loading took" is the parameters' true memory
and no checkpoint has to travel. vLLM still reads the architecture from config.json and loads a tokenizer; a
word-level tokenizer over the model's whole vocabulary ("w0" ... "wN") makes every prompt exactly as many
tokens as it has words and every sampled id decodable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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
ARCHITECTURE_DEFAULTS: dict[str, dict[str, Any]] = {
    "Qwen3ForCausalLM": {**_QWEN3_COMMON, "model_type": "qwen3"},
    "Qwen3MoeForCausalLM": {
        **_QWEN3_COMMON,
        "model_type": "qwen3_moe",
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "norm_topk_prob": True,
        "output_router_logits": False,
        "router_aux_loss_coef": 0.001,
    },
}
BOS_TOKEN = "<|endoftext|>"
EOS_TOKEN = "<|im_end|>"
UNK_TOKEN = "w0"
# Enough for /v1/chat/completions to render a prompt; the load uses /v1/completions.
CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }} {% endfor %}"


class ModelDirError(ValueError):
    """The catalog entry cannot be turned into a config.json vLLM would load."""


def config_json(model_id: str, catalog_config: Mapping[str, Any]) -> dict[str, Any]:
    """The config.json for `model_id`: the architecture's defaults overlaid with the catalog's geometry."""
    architectures = catalog_config.get("architectures")
    if not isinstance(architectures, list) or len(architectures) != 1:
        raise ModelDirError(f"{model_id}: the catalog config names no single architecture")
    defaults = ARCHITECTURE_DEFAULTS.get(architectures[0])
    if defaults is None:
        known = ", ".join(sorted(ARCHITECTURE_DEFAULTS))
        raise ModelDirError(f"{model_id}: no config.json defaults for {architectures[0]} (known: {known})")
    config = {**defaults, **catalog_config}
    config.setdefault("max_window_layers", config["num_hidden_layers"])
    return config


def vocabulary(config: Mapping[str, Any]) -> dict[str, int]:
    """One word per id of the model's vocabulary, the BOS and EOS ids under their special names."""
    size = int(config["vocab_size"])
    special = {int(config["bos_token_id"]): BOS_TOKEN, int(config["eos_token_id"]): EOS_TOKEN}
    if any(not 0 < token_id < size for token_id in special):
        raise ModelDirError(f"special token ids {sorted(special)} outside the vocabulary of {size}")
    return {special.get(token_id, f"w{token_id}"): token_id for token_id in range(size)}


def tokenizer_config(config: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": EOS_TOKEN,
        "pad_token": BOS_TOKEN,
        "unk_token": UNK_TOKEN,
        "model_max_length": int(config["max_position_embeddings"]),
        "chat_template": CHAT_TEMPLATE,
    }


def write_tokenizer_json(path: Path, vocab: Mapping[str, int]) -> None:
    """tokenizer.json through the `tokenizers` library (installed on the GPU machine), splitting on spaces."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel(vocab=dict(vocab), unk_token=UNK_TOKEN))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.add_special_tokens([AddedToken(BOS_TOKEN, special=True), AddedToken(EOS_TOKEN, special=True)])
    tokenizer.save(str(path))


def write_model_dir(root: Path, model_id: str, catalog_config: Mapping[str, Any]) -> Path:
    """`root/<model_id>`: the relative path `vllm serve <model_id>` resolves to a local directory first."""
    config = config_json(model_id, catalog_config)
    directory = root / model_id
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(config), indent=2) + "\n")
    write_tokenizer_json(directory / "tokenizer.json", vocabulary(config))
    return directory
