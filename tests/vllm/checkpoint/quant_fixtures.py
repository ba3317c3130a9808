"""Real quantization blocks (tests/vllm/checkpoint/quant_configs/*.json), each carrying its public source in `_source`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from colo.vllm.checkpoint.quant_config import read_quantization
from colo.vllm.checkpoint.quantization import DeclaredIn, QuantizationScheme

FIXTURES = Path(__file__).parent / "quant_configs"
# Which file of the checkpoint the block came from.
BLOCK_KEYS: dict[str, DeclaredIn] = {
    "quantization_config": "config.json",
    "hf_quant_config": "hf_quant_config.json",
    "quantize_config": "quantize_config.json",
}


def fixture(name: str) -> tuple[dict[str, Any], DeclaredIn]:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    assert data["_source"], f"{name}.json must cite its source"
    key = next(key for key in BLOCK_KEYS if key in data)
    return data[key], BLOCK_KEYS[key]


def scheme_of(name: str) -> QuantizationScheme:
    block, declared_in = fixture(name)
    if declared_in == "quantize_config.json":
        block = {"quant_method": "gptq", **block}
    return read_quantization(block, declared_in)
