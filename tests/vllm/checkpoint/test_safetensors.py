"""Exact bytes come from safetensors headers without reading tensors."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from colo.vllm.checkpoint.files import architecture_from_path
from colo.vllm.checkpoint.safetensors import (
    SafetensorsError,
    parse_header,
    read_local_headers,
    tensor_bytes_by_part,
)
from tests.model_files import TINY_CONFIG, safetensors_blob


def test_tensor_bytes_are_summed_by_part(tmp_path: Path) -> None:
    blob = safetensors_blob(
        {"model.layers.0.mlp.down_proj.weight": 64, "lm_head.weight": 128, "mtp.fc.weight": 32}
    )
    (tmp_path / "model-00001.safetensors").write_bytes(blob)
    parts = tensor_bytes_by_part(read_local_headers(tmp_path))
    assert parts == {"model": 64, "lm_head": 128, "mtp": 32}


def test_a_truncated_header_is_an_error() -> None:
    with pytest.raises(SafetensorsError, match="truncated"):
        parse_header(struct.pack("<Q", 100) + b"{}")


def test_an_absurd_header_length_is_refused() -> None:
    with pytest.raises(SafetensorsError, match="100 MiB"):
        parse_header(struct.pack("<Q", 2**40))


def test_a_model_directory_gives_geometry_and_exact_bytes(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(TINY_CONFIG))
    (tmp_path / "model.safetensors").write_bytes(safetensors_blob({"model.embed_tokens.weight": 32768}))
    arch = architecture_from_path(tmp_path, "local/tiny")
    assert arch.num_layers == 2 and arch.num_kv_heads == 2
    assert arch.checkpoint_bytes == 32768


def test_deepseek_style_mtp_layers_numbered_after_the_last_layer_are_their_own_part(tmp_path: Path) -> None:
    blob = safetensors_blob(
        {
            "model.layers.1.mlp.down_proj.weight": 64,
            "model.layers.2.mlp.down_proj.weight": 16,  # num_hidden_layers = 2: this is the MTP layer
            "model.layers.2.eh_proj.weight": 8,
        }
    )
    (tmp_path / "model.safetensors").write_bytes(blob)
    headers = read_local_headers(tmp_path)
    assert tensor_bytes_by_part(headers, num_hidden_layers=2) == {"model": 64, "mtp": 24}


def test_mtp_layers_are_found_by_their_own_tensors_when_the_layer_count_is_unknown(tmp_path: Path) -> None:
    blob = safetensors_blob(
        {"model.layers.61.enorm.weight": 8, "model.layers.61.mlp.w.weight": 32, "model.layers.60.x": 4}
    )
    (tmp_path / "model.safetensors").write_bytes(blob)
    assert tensor_bytes_by_part(read_local_headers(tmp_path)) == {"mtp": 40, "model": 4}


def test_a_directory_with_only_the_index_gives_its_total_size(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(TINY_CONFIG))
    index = {"metadata": {"total_size": 123456}, "weight_map": {"lm_head.weight": "model-00001.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    arch = architecture_from_path(tmp_path, "local/tiny")
    lm_head = 1000 * 64 * 2
    assert arch.checkpoint_bytes == 123456
    assert arch.checkpoint_bytes_by_part == {"model": 123456 - lm_head, "lm_head": lm_head}


def test_an_index_without_total_size_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(TINY_CONFIG))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {}}))
    with pytest.raises(SafetensorsError, match="total_size"):
        architecture_from_path(tmp_path, "local/tiny")


def test_a_model_directory_reads_the_quantization_file_beside_config_json(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(TINY_CONFIG))
    hf_quant = {
        "producer": {"name": "modelopt"},
        "quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head"]},
    }
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(hf_quant))
    arch = architecture_from_path(tmp_path, "local/tiny")
    assert (arch.quantization, arch.quant_scheme.declared_in) == ("modelopt_fp4", "hf_quant_config.json")
