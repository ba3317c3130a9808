"""The model directories the GPU runs load with random weights: config.json from the catalog, a full vocabulary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.gpu.harness.model_dirs import (
    BOS_TOKEN,
    EOS_TOKEN,
    ModelDirError,
    config_json,
    tokenizer_config,
    vocabulary,
    write_model_dir,
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
        vocabulary(
            {
                "architectures": ["Qwen3ForCausalLM"],
                "vocab_size": 1000,
                "bos_token_id": 151643,
                "eos_token_id": 151645,
            }
        )


def test_the_tokenizer_config_ends_sequences_with_the_models_eos() -> None:
    config = config_json("Qwen/Qwen3-32B", catalog_configs()["Qwen/Qwen3-32B"])
    tokenizer = tokenizer_config(config)
    assert tokenizer["eos_token"] == EOS_TOKEN
    assert tokenizer["model_max_length"] == 40960
    assert tokenizer["tokenizer_class"] == "PreTrainedTokenizerFast"


def test_a_qwen3_5_vision_language_config_keeps_the_catalog_geometry_in_its_nested_configs() -> None:
    config = config_json("Qwen/Qwen3.6-27B-FP8", catalog_configs()["Qwen/Qwen3.6-27B-FP8"])
    text, vision = config["text_config"], config["vision_config"]
    assert (text["num_hidden_layers"], text["hidden_size"], text["linear_num_value_heads"]) == (64, 5120, 48)
    assert text["rope_parameters"]["mrope_section"] == [11, 11, 10]  # the family's, not in the catalog
    assert (vision["depth"], vision["out_hidden_size"], vision["num_heads"]) == (27, 5120, 16)
    assert config["quantization_config"]["weight_block_size"] == [128, 128]
    assert "max_window_layers" not in config


def test_a_qwen3_5_vocabulary_puts_the_vision_tokens_at_the_configs_ids() -> None:
    config = config_json("Qwen/Qwen3.6-27B", catalog_configs()["Qwen/Qwen3.6-27B"])
    vocab = vocabulary(config)
    assert len(vocab) == 248320
    assert vocab["<|image_pad|>"] == config["image_token_id"] == 248056
    assert vocab["<|video_pad|>"] == 248057 and vocab["<|vision_start|>"] == 248053
    assert vocab[EOS_TOKEN] == 248046 and vocab["<|endoftext|>"] == 248044


def test_a_qwen3_5_directory_carries_the_image_and_video_processor_settings(tmp_path: Path) -> None:
    pytest.importorskip("tokenizers")
    directory = write_model_dir(tmp_path, "Qwen/Qwen3.6-27B", catalog_configs()["Qwen/Qwen3.6-27B"])
    image = json.loads((directory / "preprocessor_config.json").read_text())
    video = json.loads((directory / "video_preprocessor_config.json").read_text())
    assert image["size"]["longest_edge"] == 16777216 and image["processor_class"] == "Qwen3VLProcessor"
    assert video["size"]["longest_edge"] == 25165824
    assert tokenizer_config(json.loads((directory / "config.json").read_text()))["model_max_length"] == 262144


def test_an_xlm_roberta_encoder_gets_its_special_tokens_from_id_zero() -> None:
    config = config_json("BAAI/bge-m3", catalog_configs()["BAAI/bge-m3"])
    assert config["model_type"] == "xlm-roberta" and config["num_hidden_layers"] == 24
    vocab = vocabulary(config)
    assert (vocab["<s>"], vocab["<pad>"], vocab["</s>"], vocab["<unk>"]) == (0, 1, 2, 3)
    assert len(vocab) == 250002
    tokenizer = tokenizer_config(config)
    assert (tokenizer["eos_token"], tokenizer["unk_token"], tokenizer["model_max_length"]) == (
        "</s>",
        "<unk>",
        8194,
    )
