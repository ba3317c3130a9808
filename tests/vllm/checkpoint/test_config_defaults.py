"""A config.json that leaves keys out is read as transformers' config class fills them, since vLLM reads it
through AutoConfig: Gemma 3's configs, for one, state neither their heads nor their vocabulary."""

from __future__ import annotations

import pytest

from colo.catalog.data import parse_yaml
from colo.vllm.checkpoint.architecture import ArchitectureError
from colo.vllm.checkpoint.config_defaults import class_defaults, with_class_defaults
from colo.vllm.checkpoint.hf_config import from_hf_config
from tests.paths import REPO_ROOT

# google/gemma-3-4b-it's own text_config (tests/hub_files, cited in its SOURCES.yaml): no heads, no vocabulary.
GEMMA3_4B = {
    "architectures": ["Gemma3ForConditionalGeneration"],
    "model_type": "gemma3",
    "text_config": {
        "hidden_size": 2560,
        "intermediate_size": 10240,
        "model_type": "gemma3_text",
        "num_hidden_layers": 34,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "sliding_window": 1024,
    },
    "torch_dtype": "bfloat16",
}


def test_an_omitted_key_takes_the_default_of_transformers_config_class() -> None:
    arch = from_hf_config(GEMMA3_4B, "google/gemma-3-4b-it")
    assert (arch.num_attention_heads, arch.num_kv_heads, arch.head_dim) == (8, 4, 256)
    assert (arch.vocab_size, arch.max_position_embeddings, arch.tie_word_embeddings) == (262208, 131072, True)
    # sliding_window_pattern 6: every sixth of the 34 layers attends globally
    assert (arch.full_attention_layers, arch.sliding_attention_layers, arch.sliding_window) == (5, 29, 1024)


def test_a_key_the_file_states_wins_over_the_default() -> None:
    stated = {**GEMMA3_4B, "text_config": {**GEMMA3_4B["text_config"], "num_attention_heads": 16}}
    assert from_hf_config(stated, "test/gemma3").num_attention_heads == 16
    assert with_class_defaults({"model_type": "gemma3_text", "head_dim": None})["head_dim"] is None


def test_a_model_type_whose_class_colo_has_not_read_gets_no_invented_value() -> None:
    assert class_defaults("llama") == {} and class_defaults(None) == {}
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64}
    with pytest.raises(ArchitectureError, match="has none of num_hidden_layers"):
        from_hf_config(config, "test/llama")


def test_every_default_table_names_the_class_it_was_read_from() -> None:

    table = parse_yaml((REPO_ROOT / "colo" / "vllm" / "checkpoint" / "config_defaults.yaml").read_text())
    for model_type, entry in table.items():
        assert "transformers" in entry["source"] and "Config.__init__" in entry["source"], model_type
        assert entry["defaults"], model_type
