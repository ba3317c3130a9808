"""Safetensors files for the local Hub: a real header (tensor names, dtypes, shapes, byte offsets) ahead of a body
that reads as zeros, at the length a checkpoint of those tensors has. Only the header is ever read."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping

from tests.hub.server import SparseFile

DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F8_E4M3": 1, "I32": 4, "U8": 1}


def sparse_safetensors(tensors: Mapping[str, tuple[str, tuple[int, ...]]]) -> SparseFile:
    """`tensors`: name -> (safetensors dtype, shape), laid out in order."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = math.prod(shape) * DTYPE_BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # the format pads the header to 8 bytes
    return SparseFile(struct.pack("<Q", len(text)) + text, 8 + len(text) + offset)


def llama_tensors(config: Mapping[str, int], layers: range) -> dict[str, tuple[str, tuple[int, ...]]]:
    """A Llama checkpoint's tensors by their Transformers names, for the layers given (bf16)."""
    h, i = config["hidden_size"], config["intermediate_size"]
    heads, kv = config["num_attention_heads"], config["num_key_value_heads"]
    d = config.get("head_dim") or h // heads
    out: dict[str, tuple[str, tuple[int, ...]]] = {}
    for n in layers:
        p = f"model.layers.{n}."
        out |= {
            p + "self_attn.q_proj.weight": ("BF16", (heads * d, h)),
            p + "self_attn.k_proj.weight": ("BF16", (kv * d, h)),
            p + "self_attn.v_proj.weight": ("BF16", (kv * d, h)),
            p + "self_attn.o_proj.weight": ("BF16", (h, heads * d)),
            p + "mlp.gate_proj.weight": ("BF16", (i, h)),
            p + "mlp.up_proj.weight": ("BF16", (i, h)),
            p + "mlp.down_proj.weight": ("BF16", (h, i)),
            p + "input_layernorm.weight": ("BF16", (h,)),
            p + "post_attention_layernorm.weight": ("BF16", (h,)),
        }
    return out
