"""Exact bytes come from safetensors headers without reading tensors."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from colo.catalog.models import architecture_from_path
from colo.catalog.safetensors import SafetensorsError, parse_header, read_local_headers, tensor_bytes_by_part
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
