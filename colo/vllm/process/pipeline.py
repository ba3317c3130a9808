"""Pipeline-parallel stages: which decoder layers each rank holds, and what else sits on the first and last.

`get_pp_indices` (vllm 0.8.0 .. 0.33.0 distributed/utils.py, unchanged but for formatting) splits the decoder
layers evenly and gives the remainder to the stages before the last, from the second-to-last backwards
("the last partition is excluded because it often contains an additional norm layer"); VLLM_PP_LAYER_PARTITION,
which overrides it, is not taken. The model classes put the embedding on the first stage and the final norm and
lm_head on the last, with a second copy of the embedding on the last when the embeddings are tied, the lm_head
then sharing it (`vllm 0.19.0 model_executor/models/llama.py::LlamaModel.__init__`, `LlamaForCausalLM.__init__`;
qwen2.py, qwen3.py, gemma3.py, the same). Vision towers are built on every stage (`qwen3_vl.py`, `gemma3_mm.py`:
no rank condition).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from colo.vllm.checkpoint.architecture import ModelArchitecture

LayerKind = Literal["full", "sliding", "linear"]


@dataclass(frozen=True)
class Stage:
    """One pipeline stage: the decoder layers [start, end) of `size` stages; `rank` counts from 0."""

    rank: int
    size: int
    start: int
    end: int

    @property
    def first(self) -> bool:
        return self.rank == 0

    @property
    def last(self) -> bool:
        return self.rank == self.size - 1

    @property
    def layers(self) -> int:
        return self.end - self.start

    def holds(self, index: int) -> bool:
        return self.start <= index < self.end


def pp_indices(num_layers: int, rank: int, size: int) -> tuple[int, int]:
    """`get_pp_indices`: the first and one-past-last layer of stage `rank`."""
    partitions = [num_layers // size] * size
    for i in range(2, num_layers % size + 2):
        partitions[-i] += 1
    start = sum(partitions[:rank])
    return start, start + partitions[rank]


def stages(num_layers: int, size: int) -> tuple[Stage, ...]:
    return tuple(Stage(rank, size, *pp_indices(num_layers, rank, size)) for rank in range(size))


def _every_nth(index: int, count: int, total: int) -> bool:
    """Whether layer `index` is one of `count` layers spread evenly over `total` (the last of each span)."""
    return count > 0 and (index + 1) % max(1, total // count) == 0


def layer_kind(arch: ModelArchitecture, index: int) -> LayerKind:
    """The attention kind of decoder layer `index`, as colo places the kinds (the full-attention layers are
    spread evenly, the last of each span: Gemma's and Qwen3.5's patterns)."""
    if arch.linear_attention_layers:
        return "full" if _every_nth(index, arch.full_attention_layers, arch.num_layers) else "linear"
    if arch.sliding_attention_layers:
        return "full" if _every_nth(index, arch.full_attention_layers, arch.num_layers) else "sliding"
    return "full"


def kind_indices(arch: ModelArchitecture, kind: LayerKind) -> list[int]:
    return [i for i in range(arch.num_layers) if layer_kind(arch, i) == kind]
