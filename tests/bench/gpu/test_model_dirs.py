"""The model directories the GPU runs load with random weights: config.json from the catalog, a full vocabulary."""

from __future__ import annotations

import pytest

from bench.gpu.harness.model_dirs import (
    BOS_TOKEN,
    EOS_TOKEN,
    ModelDirError,
    config_json,
    tokenizer_config,
    vocabulary,
)
from bench.gpu.make_spec import catalog_configs


def test_config_json_keeps_the_catalog_geometry_over_the_architecture_defaults() -> None:
    catalog = catalog_configs()["Qwen/Qwen3-32B"]
    config = config_json("Qwen/Qwen3-32B", {**catalog, "rms_norm_eps": 1e-5})
    assert config["model_type"] == "qwen3"
    assert config["num_hidden_layers"] == 64 and config["intermediate_size"] == 25600
    assert config["rms_norm_eps"] == 1e-5  # the catalog's value wins
    assert config["max_window_layers"] == 64


def test_an_moe_config_gets_the_moe_keys_vllm_reads() -> None:
    config = config_json("Qwen/Qwen3-30B-A3B", catalog_configs()["Qwen/Qwen3-30B-A3B"])
    assert config["model_type"] == "qwen3_moe"
    assert (config["num_experts"], config["num_experts_per_tok"], config["norm_topk_prob"]) == (128, 8, True)


def test_a_quantized_variant_keeps_its_quantization_block() -> None:
    config = config_json("Qwen/Qwen3-32B-FP8", catalog_configs()["Qwen/Qwen3-32B-FP8"])
    assert config["quantization_config"]["quant_method"] == "fp8"
    assert config["hidden_size"] == 5120


def test_an_architecture_without_defaults_is_refused_by_name() -> None:
    with pytest.raises(ModelDirError, match="LlamaForCausalLM"):
        config_json("meta-llama/Llama-3.1-8B", {"architectures": ["LlamaForCausalLM"]})
    with pytest.raises(ModelDirError, match="no single architecture"):
        config_json("x/y", {"architectures": []})


def test_the_vocabulary_names_every_id_once_with_the_special_tokens_at_their_ids() -> None:
    config = config_json("Qwen/Qwen3-0.6B", catalog_configs()["Qwen/Qwen3-0.6B"])
    vocab = vocabulary(config)
    assert len(vocab) == config["vocab_size"] == 151936
    assert sorted(vocab.values()) == list(range(151936))
    assert vocab[BOS_TOKEN] == config["bos_token_id"] and vocab[EOS_TOKEN] == config["eos_token_id"]
    assert vocab["w151935"] == 151935


def test_special_ids_outside_the_vocabulary_are_refused() -> None:
    with pytest.raises(ModelDirError, match="outside the vocabulary"):
        vocabulary({"vocab_size": 1000, "bos_token_id": 151643, "eos_token_id": 151645})


def test_the_tokenizer_config_ends_sequences_with_the_models_eos() -> None:
    config = config_json("Qwen/Qwen3-32B", catalog_configs()["Qwen/Qwen3-32B"])
    tokenizer = tokenizer_config(config)
    assert tokenizer["eos_token"] == EOS_TOKEN
    assert tokenizer["model_max_length"] == 40960
    assert tokenizer["tokenizer_class"] == "PreTrainedTokenizerFast"
