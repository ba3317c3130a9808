"""How vLLM serves a reranker at /rerank: as a sequence classifier with one label.

vLLM's scoring API answers only for `num_labels == 1` ("Scoring API is only enabled for num_labels == 1",
vllm 0.22.0 entrypoints/pooling/utils.py and pooling/offline.py). A checkpoint of a sequence-classification
architecture (a cross-encoder) is served as it is. `--convert classify` turns a causal LM into a classifier of
its config's `num_labels`, two by transformers' default, which then serves /classify but no /rerank: the GPU run
of Qwen3-Reranker-0.6B with vLLM 0.22.0 got a 404 on every /rerank that way.

The one causal-LM reranker format vLLM scores is Qwen3-Reranker's: the logits of "no" and "yes" become one label
when the config says so, through `--hf-overrides`, from 0.9.2
(vllm/model_executor/models/config.py::Qwen3ForSequenceClassificationConfig sets `method =
"from_2_way_softmax"` where `is_original_qwen3_reranker` is set; vLLM's own examples under
examples/pooling/score/ pass exactly these overrides; 0.9.1 has no `classifier_from_token` at all).
"""

from __future__ import annotations

import json
from typing import Any

from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.rules import at_least

QWEN3_RERANKER_ARCHITECTURE = "Qwen3ForCausalLM"
QWEN3_RERANKER_OVERRIDES: dict[str, Any] = {
    "architectures": ["Qwen3ForSequenceClassification"],
    "classifier_from_token": ["no", "yes"],
    "is_original_qwen3_reranker": True,
}
QWEN3_RERANKER_FIRST = "0.9.2"


def is_causal_lm(arch: ModelArchitecture) -> bool:
    return arch.architecture.endswith("ForCausalLM")


def reranker_overrides(arch: ModelArchitecture) -> dict[str, Any] | None:
    """The hf_overrides that make vLLM score with the checkpoint (None: it is served as it is)."""
    return QWEN3_RERANKER_OVERRIDES if arch.architecture == QWEN3_RERANKER_ARCHITECTURE else None


def reranker_overrides_argument(arch: ModelArchitecture) -> list[str]:
    overrides = reranker_overrides(arch)
    return ["--hf-overrides", json.dumps(overrides, separators=(",", ":"))] if overrides else []


def reranker_refusal(arch: ModelArchitecture, version: str) -> str | None:
    """Why vLLM `version` would serve no /rerank from this checkpoint, or None where it scores."""
    if arch.architecture == QWEN3_RERANKER_ARCHITECTURE:
        if at_least(version, QWEN3_RERANKER_FIRST):
            return None
        return (
            f"{arch.model_id} is a causal LM that scores with its 'yes'/'no' logits (the Qwen3-Reranker format); "
            f"vLLM serves that as a one-label scorer from {QWEN3_RERANKER_FIRST} (`is_original_qwen3_reranker`), "
            f"and {version} would answer no /rerank: pin vllm.version {QWEN3_RERANKER_FIRST} or later"
        )
    if is_causal_lm(arch):
        return (
            f"{arch.model_id} is a causal LM ({arch.architecture}): vLLM serves /rerank only from a "
            "sequence classifier with one label, and converts a causal LM into one of its config's num_labels "
            "(2 unless stated): name a cross-encoder or *ForSequenceClassification checkpoint as the reranker"
        )
    return None
