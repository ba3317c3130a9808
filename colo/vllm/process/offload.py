"""`--cpu-offload-gb`: the weights vLLM keeps in host memory instead of on the GPU.

Read in vllm 0.33.0. With `cpu_offload_gb > 0` the UVA offloader (model_executor/offloader/base.py picks it,
with `cpu_offload_max_bytes = int(cpu_offload_gb * 1024**3)`, per process and so per rank) wraps the decoder
layers `make_layers` builds (model_executor/models/utils.py::make_layers), in layer order, as they are
constructed; `UVAOffloader._maybe_offload_to_cpu` (model_executor/offloader/uva.py) then moves their
parameters to pinned host memory one by one, in registration order, while the bytes moved so far are below
the limit: the parameter that crosses the limit moves whole, so at least the limit moves and at most the
limit plus one parameter. The embedding, the final norm and the lm_head are built outside make_layers and
stay on the GPU. Offloaded parameters never reach the GPU, so "Model loading took" is the weights less them.

Sized here for checkpoints vLLM loads unquantized, whose parameters are allocated at their final size: a
quantized method rebuilds some parameters after loading (Marlin repacking, scale conversion), and a
multimodal model offloads its towers before the decoder layers (models/interfaces.py), so both are refused.
Within a layer, vLLM registers attention before the MLP (and the small norms around them); the norms are
left out of the order, which moves the result only when the limit falls within a norm's few KiB of a
parameter boundary.

Only a model runner that installs the offloader offloads: through 0.27.1 the V2 model runner
(v1/worker/gpu/model_runner.py, vLLM's default for dense unquantized decoders in those releases) never calls
`set_offloader`, so `--cpu-offload-gb` changes nothing there and "Model loading took" keeps every weight (Qwen3-8B
on vLLM 0.22.0 logged 15.27 GiB with and without `--cpu-offload-gb 2`, bench/gpu/results/2026-12-07-h100-lora-
offload-*); the V1 runner (gpu_model_runner.py) installs it in every release read, the V2 runner from 0.28.0.
"""

from __future__ import annotations

from colo.catalog.units import GIB
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.process.weight_modules import module_inventory

DECODER_PARTS = ("attention", "mlp", "experts")


class OffloadRefused(ValueError):
    """colo does not size CPU offload for this model; the message says why."""


def _parameters_in_order(arch: ModelArchitecture, tensor_parallel_size: int) -> list[int]:
    """Elements of each offloadable parameter on one rank, in the order vLLM builds them."""
    inv = module_inventory(arch, tensor_parallel_size=tensor_parallel_size, pooling=False, load_mtp=False)
    by_layer: dict[str, list[int]] = {}
    order: list[str] = []

    def add(prefix: str, elements: list[int]) -> None:
        layer = ".".join(prefix.split(".")[:3])  # model.layers.<i>
        if layer not in by_layer:
            by_layer[layer] = []
            order.append(layer)
        by_layer[layer] += elements

    for linear in inv.linears:
        if linear.part in DECODER_PARTS:
            add(linear.module.prefix, [linear.k * linear.n])
    for stack in inv.experts:  # FusedMoE's w13_weight and w2_weight, after the layer's attention
        add(
            stack.module.prefix,
            [stack.experts * 2 * stack.inter * stack.hidden, stack.experts * stack.hidden * stack.inter],
        )
    return [elements for layer in order for elements in by_layer[layer]]


def cpu_offloaded_bytes(
    arch: ModelArchitecture, cpu_offload_gb: float, *, tensor_parallel_size: int = 1
) -> int:
    """Bytes of weights `--cpu-offload-gb` moves off one rank's GPU (subtract them from the weights).

    Raises OffloadRefused for a quantized or multimodal checkpoint (see the module docstring)."""
    if arch.quant_scheme.method not in ("", "none"):
        raise OffloadRefused(
            f"colo sizes --cpu-offload-gb for unquantized checkpoints only; {arch.model_id} is "
            f"{arch.quant_scheme.method}, whose parameters vLLM rebuilds after loading"
        )
    if arch.vision_parameters:
        raise OffloadRefused(
            f"colo sizes --cpu-offload-gb for text models only; {arch.model_id} offloads its vision tower first"
        )
    limit = int(cpu_offload_gb * GIB)
    moved = 0
    for elements in _parameters_in_order(arch, tensor_parallel_size):
        if moved >= limit:
            break
        moved += elements * arch.dtype_bytes  # parameters are allocated in the dtype vLLM runs the model in
    return moved
