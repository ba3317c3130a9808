"""Small model files for tests: a tiny Llama-shaped config.json, and valid safetensors files."""

from __future__ import annotations

import json
import struct
from typing import Any

TINY_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 1000,
    "max_position_embeddings": 2048,
    "torch_dtype": "bfloat16",
}


def safetensors_blob(tensors: dict[str, int], pad_to: int = 0) -> bytes:
    """A valid safetensors file: `tensors` maps names to byte sizes (uint8 tensors, zero-filled)."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, size in tensors.items():
        header[name] = {"dtype": "U8", "shape": [size], "data_offsets": [offset, offset + size]}
        offset += size
    encoded = json.dumps(header).encode()
    body = bytes(offset) + bytes(max(0, pad_to - offset))
    return struct.pack("<Q", len(encoded)) + encoded + body
