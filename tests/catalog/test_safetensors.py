"""Exact bytes come from safetensors headers without reading tensors."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from colo.catalog.models import architecture_from_path
from colo.catalog.safetensors import SafetensorsError, parse_header, read_local_headers, tensor_bytes_by_part


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], int]]) -> None:
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape, size) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)


def test_tensor_bytes_are_summed_by_part(tmp_path: Path) -> None:
    write_safetensors(
        tmp_path / "model-00001.safetensors",
        {
            "model.layers.0.mlp.down_proj.weight": ("BF16", [8, 4], 64),
            "lm_head.weight": ("BF16", [16, 4], 128),
            "mtp.layers.0.fc.weight": ("BF16", [4, 4], 32),
        },
    )
    parts = tensor_bytes_by_part(read_local_headers(tmp_path))
    assert parts == {"model": 64, "lm_head": 128, "mtp": 32}


def test_a_truncated_header_is_an_error() -> None:
    with pytest.raises(SafetensorsError, match="truncated"):
        parse_header(struct.pack("<Q", 100) + b"{}")


def test_an_absurd_header_length_is_refused() -> None:
    with pytest.raises(SafetensorsError, match="100 MiB"):
        parse_header(struct.pack("<Q", 2**40))


def test_a_model_directory_gives_geometry_and_exact_bytes(tmp_path: Path) -> None:
    config = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 256,
        "max_position_embeddings": 512,
        "torch_dtype": "bfloat16",
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    write_safetensors(
        tmp_path / "model.safetensors", {"model.embed_tokens.weight": ("BF16", [256, 64], 32768)}
    )
    arch = architecture_from_path(tmp_path, "local/tiny")
    assert arch.num_layers == 2 and arch.num_kv_heads == 2
    assert arch.checkpoint_bytes == 32768
