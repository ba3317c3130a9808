"""CUDA-graph capture sizes and the graph memory vLLM estimates (`profile_cudagraph_memory`).

Sizes follow `VllmConfig._set_cudagraph_sizes` for the release's rule; FULL decode graphs are captured
for sizes up to `max_num_seqs * (1 + speculative tokens)` when the default mode is FULL_AND_PIECEWISE.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.rules import VllmRules

KIB = 1024
SMALL_CAPTURE_SIZES = (1, 2, 4, 8)  # the field report's attempt: four sizes instead of 51


def default_capture_sizes(
    rules: VllmRules, *, max_num_seqs: int, max_num_batched_tokens: int, num_speculative_tokens: int = 0
) -> list[int]:
    """`VllmConfig._set_cudagraph_sizes` (0.12+) / `SchedulerConfig.cuda_graph_sizes` (<= 0.11).

    Up to 0.9.2 the list is fixed, [1, 2, 4] + every multiple of 8 to 512, whatever max_num_seqs is
    (`vllm 0.8.0 config.py::VllmConfig._set_cudagraph_sizes`; 0.9.x `cuda_graph_sizes` defaults to [512])."""
    if rules.capture_rule == "fixed512":
        return [s for s in (1, 2, 4, *range(8, 513, 8)) if s <= max_num_batched_tokens]
    query_len = 1 + num_speculative_tokens
    top = 2 * max_num_seqs * (query_len if rules.capture_spec_multiplier else 1)
    top = min(top, 512)
    if rules.capture_rule == "step8":
        sizes = [1, 2, 4, *range(8, top + 1, 8)]
    else:
        top = min(top, max_num_batched_tokens)
        sizes = [s for s in (1, 2, 4) if s <= top]
        sizes += [*range(8, min(top + 1, 256), 8), *range(256, top + 1, 16)]
    if rules.capture_append_max_num_batched_tokens and max_num_batched_tokens <= top:
        sizes.append(max_num_batched_tokens)
    if rules.capture_append_max_num_seqs and max_num_seqs <= top:
        sizes.append(max_num_seqs)
    return sorted({s for s in sizes if s <= max_num_batched_tokens})


@dataclass(frozen=True)
class GraphPlan:
    piecewise: int
    full: int
    largest: int
    bytes: int

    @property
    def count(self) -> int:
        return self.piecewise + self.full


def graph_memory(
    arch: ModelArchitecture,
    rules: VllmRules,
    sizes: list[int],
    *,
    max_num_seqs: int,
    decode_query_len: int,
    kib_per_graph_layer: int,
) -> GraphPlan:
    """Graph memory grows with graphs x layers (nodes and kernel arguments) plus the largest batch's buffers."""
    if not sizes:
        return GraphPlan(0, 0, 0, 0)
    piecewise = len(sizes)
    full = 0
    if rules.cudagraph_mode == "FULL_AND_PIECEWISE":
        full = len([s for s in sizes if s <= max_num_seqs * decode_query_len])
    largest = max(sizes)
    per_graph = arch.num_layers * kib_per_graph_layer * KIB
    buffers = largest * (4 * arch.hidden_size + 3 * arch.intermediate_size) * arch.dtype_bytes
    return GraphPlan(piecewise, full, largest, (piecewise + full) * per_graph + buffers)
