"""What tensor parallelism adds to one rank's GPU memory, and whether vLLM's budget sees it, by release.

`init_worker_distributed_environment` builds vLLM's NCCL communicator for the TP group (and one for the EP
group where the release creates it), the custom all-reduce IPC buffers and, on Hopper/Blackwell, a
symmetric-memory buffer. Up to 0.10.2 this runs after the startup snapshot, so the budget pays for it
(`non_torch_increase`); from 0.11 it runs before the snapshot ("Initialize the distributed environment BEFORE
taking memory snapshot", `vllm 0.11.0 v1/worker/gpu_worker.py::Worker.init_device`), so it only shrinks the
free memory the startup check sees. Two things always land inside the budget: the communicator PyTorch's
process group creates at the dummy sampler's first logits all-gather (releases whose `CudaCommunicator` has no
all-gather of its own, up to 0.25.1), and FlashInfer's all-reduce workspace (0.17+, compiled on Hopper/
Blackwell; 0.29+ in eager mode too). Sizes of what NCCL allocates are measured (colo/vllm/rules.yaml constants);
the buffer sizes vLLM chooses come from its source, cited below.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.catalog import MIB, GpuSpec
from colo.vllm.process.pipeline import Stage
from colo.vllm.rules import TpCommunicationMib, VllmRules

# vllm 0.11.0 .. 0.33.0 distributed/device_communicators/all_reduce_utils.py::SYMM_MEM_ALL_REDUCE_MAX_SIZES
SYMM_MEM_MIB: dict[tuple[int, int], dict[int, int]] = {
    (9, 0): {2: 64, 4: 32, 6: 64, 8: 64},
    (10, 0): {2: 8, 4: 32, 6: 128, 8: 128},
    (10, 3): {2: 4, 4: 32, 6: 32, 8: 64},
}
# vllm 0.8.0 .. 0.33.0 distributed/device_communicators/custom_all_reduce.py::CustomAllreduce
# _SUPPORTED_WORLD_SIZES (16 joins in 0.27 with the larger legacy buffer)
CUSTOM_ALL_REDUCE_SIZES = (2, 4, 6, 8)
# NCCL 2.21.5 .. 2.28.9 src/transport/nvls.cc: NVLS_NCHANNELS_SM90 (Hopper; Blackwell's 24/32 not modelled)
NVLS_CHANNELS_SM90 = 16
# vllm 0.17.0 / 0.20.0 compilation/passes/fusion/allreduce_rms_fusion.py::FI_ALLREDUCE_FUSION_MAX_SIZE_MB
FLASHINFER_AR_MAX_MIB: dict[tuple[int, int], dict[int, float]] = {
    (9, 0): {2: 64, 4: 2, 8: 0.5},
    (10, 0): {2: 64, 4: 32, 8: 1},
    (10, 3): {2: 64, 4: 64, 8: 2},
}


@dataclass(frozen=True)
class TpCommunication:
    """Per-rank bytes: before the snapshot (outside the budget, seen by the startup check), inside the KV
    budget's non-KV memory, and after the snapshot but counted nowhere (in the footprint only)."""

    before_snapshot: int = 0
    in_budget: int = 0
    unbudgeted: int = 0


def _flashinfer_workspace(
    rules: VllmRules, gpu: GpuSpec, tp: int, *, eager: bool, hidden: int, tokens: int, element: int
) -> int:
    """FlashInfer's trtllm all-reduce fusion workspace: buffer, Lamport buffers (3x) and flags, i.e. about
    4 x tp x the largest fused tensor, plus 2 MiB (flashinfer/comm/trtllm_ar.py; derived, not measured). The
    fused tensor is capped by the table above and, when the compile pass creates it, by the batch."""
    mode = rules.flashinfer_allreduce_workspace
    limit = FLASHINFER_AR_MAX_MIB.get(gpu.compute_capability, {}).get(tp)
    if mode == "none" or limit is None or (eager and mode == "compiled"):
        return 0
    largest = int(limit * MIB)
    if not eager:  # AllReduceFusionPass: max_token_num = min(max_size // (hidden * element), mnbt)
        largest = min(largest, tokens * hidden * element)
    return 4 * tp * largest + 2 * MIB


def _nvls_mib(rules: VllmRules, gpu: GpuSpec, tp: int, nvswitch: bool) -> int:
    """NVLink SHARP buffers of the TP communicator on an NVSwitch board (HGX: p4d/p5-class). NCCL turns NVLS on
    only for more than two GPUs with multicast support (`src/transport/nvls.cc::ncclNvlsInit`: `gpuCount <= 2`
    returns), on Hopper with 16 channels, one NVLS head per GPU of the communicator, each channel and head
    `nvls_mib_per_channel_head` (docs/research/nccl-memory.md §2). Read in NCCL's source; multicast could not be
    measured here. Allocated at init (2.21.5) or at the first NVLS collective, the profile's (2.26+): in the budget
    either way."""
    if not nvswitch or tp <= 2 or gpu.compute_capability != (9, 0):
        return 0
    return NVLS_CHANNELS_SM90 * tp * rules.nvls_mib_per_channel_head


def _nccl_mib(rules: VllmRules, sizes: TpCommunicationMib, moe: bool) -> int:
    """vLLM's own communicators: the TP group's, and the EP group's where the release builds one."""
    cumem = rules.nccl_cumem
    mib = sizes.first_nccl_communicator if cumem else sizes.first_nccl_communicator_cumem_off
    if rules.ep_group == "every_model" or (rules.ep_group == "moe_only" and moe):
        mib += sizes.next_nccl_communicator if cumem else sizes.next_nccl_communicator_cumem_off
    return mib


def _custom_all_reduce_mib(
    rules: VllmRules, sizes: TpCommunicationMib, tp: int, *, nvlink: bool
) -> tuple[int, int]:
    """(IPC buffers, rank_data). Beyond two ranks the custom all-reduce needs every pair of GPUs one NVLink hop
    apart and returns before allocating anything otherwise ("Custom allreduce is disabled because it's not
    supported on more than two PCIe-only GPUs", `vllm 0.22.0 / 0.34.0 distributed/device_communicators/
    custom_all_reduce.py::CustomAllreduce.__init__`); peer-to-peer access is assumed where the topology is not
    known (`peer_to_peer` sizes the other case)."""
    if tp > 2 and not nvlink:
        return 0, 0
    large = rules.custom_all_reduce_large_buffer
    if tp not in ((*CUSTOM_ALL_REDUCE_SIZES, 16) if large else CUSTOM_ALL_REDUCE_SIZES):
        return 0, 0
    ipc = sizes.custom_all_reduce_ipc + (sizes.custom_all_reduce_ipc_extra_large_buffer if large else 0)
    return ipc, sizes.custom_all_reduce_rank_data


def tp_communication(
    rules: VllmRules,
    sizes: TpCommunicationMib,
    gpu: GpuSpec,
    *,
    tensor_parallel_size: int,
    moe: bool,
    pooling: bool,
    eager: bool,
    hidden: int,
    max_num_batched_tokens: int,
    element: int,
    stage: Stage | None = None,
    nvswitch: bool = False,
    nvlink: bool = True,
) -> TpCommunication:
    """One rank's communication memory: its tensor-parallel group's and, at pipeline parallel, its stage's.
    `nvswitch`: the ranks sit on one NVSwitch board, where NCCL adds NVLink SHARP buffers from three ranks."""
    samples = stage is None or stage.last  # only the last stage gathers logits
    tp = _tensor_parallel(
        rules,
        sizes,
        gpu,
        tensor_parallel_size=tensor_parallel_size,
        moe=moe,
        pooling=pooling or not samples,
        eager=eager,
        hidden=hidden,
        max_num_batched_tokens=max_num_batched_tokens,
        element=element,
        nvlink=nvlink,
    )
    nvls = _nvls_mib(rules, gpu, tensor_parallel_size, nvswitch) * MIB
    tp = TpCommunication(tp.before_snapshot, tp.in_budget + nvls, tp.unbudgeted)
    if stage is None or stage.size <= 1:
        return tp
    pp = _pipeline_parallel(rules, sizes, stage, first_communicator=tensor_parallel_size <= 1)
    return TpCommunication(
        tp.before_snapshot + pp.before_snapshot, tp.in_budget + pp.in_budget, tp.unbudgeted + pp.unbudgeted
    )


def _pipeline_parallel(
    rules: VllmRules, sizes: TpCommunicationMib, stage: Stage, *, first_communicator: bool
) -> TpCommunication:
    """The PP group's communicator and the point-to-point ones that carry the hidden states between stages.

    `initialize_model_parallel` builds the PP group after the TP group; its CudaCommunicator holds a PyNccl
    communicator only (custom all-reduce and symmetric memory are for groups named "tp", `vllm 0.9.0 .. 0.33.0
    distributed/device_communicators/cuda_communicator.py::CudaCommunicator.__init__`), charged like the TP
    group's, before the snapshot from 0.11. The stages send their IntermediateTensors with
    `torch.distributed.isend` on the PP device group (`distributed/parallel_state.py::
    GroupCoordinator.isend_tensor_dict`): PyTorch's ProcessGroupNCCL builds one communicator per pair of ranks
    that send to each other, at the first request, after the KV cache is allocated (in the footprint, in no
    budget). Their size is read, not measured: colo charges each the measured two-rank communicator PyTorch's
    process group creates for an all-gather (`torch_nccl_group`)."""
    cumem = rules.nccl_cumem
    first = sizes.first_nccl_communicator if cumem else sizes.first_nccl_communicator_cumem_off
    later = sizes.next_nccl_communicator if cumem else sizes.next_nccl_communicator_cumem_off
    group = (first if first_communicator else later) * MIB
    peers = (0 if stage.first else 1) + (0 if stage.last else 1)
    point_to_point = peers * (sizes.torch_nccl_group if cumem else sizes.torch_nccl_group_cumem_off) * MIB
    if rules.dist_init_before_snapshot:
        return TpCommunication(group, 0, point_to_point)
    return TpCommunication(0, group, point_to_point)


def _tensor_parallel(
    rules: VllmRules,
    sizes: TpCommunicationMib,
    gpu: GpuSpec,
    *,
    tensor_parallel_size: int,
    moe: bool,
    pooling: bool,
    eager: bool,
    hidden: int,
    max_num_batched_tokens: int,
    element: int,
    nvlink: bool = True,
) -> TpCommunication:
    tp = tensor_parallel_size
    if tp <= 1:
        return TpCommunication()
    nccl = _nccl_mib(rules, sizes, moe)
    ipc, rank_data = _custom_all_reduce_mib(rules, sizes, tp, nvlink=nvlink)
    symm = SYMM_MEM_MIB.get(gpu.compute_capability, {}).get(tp) if rules.symm_mem_all_reduce else None
    symm_mib = symm + sizes.symm_mem_overhead if symm else 0
    gather = 0
    if rules.logits_gather_creates_communicator and not pooling:
        gather = sizes.torch_nccl_group if rules.nccl_cumem else sizes.torch_nccl_group_cumem_off
    workspace = _flashinfer_workspace(
        rules, gpu, tp, eager=eager, hidden=hidden, tokens=max_num_batched_tokens, element=element
    )
    if rules.dist_init_before_snapshot:
        return TpCommunication((nccl + ipc + rank_data + symm_mib) * MIB, gather * MIB + workspace, 0)
    if rules.kv_accounting == "global":  # every byte on the device is charged, torch's rank_data too
        return TpCommunication(0, (nccl + ipc + rank_data + gather) * MIB + workspace, 0)
    # 0.9.1-0.10.2: the non-torch growth pays for NCCL and the IPC buffers; rank_data is a torch tensor
    # allocated before the profile's peak reset, so no term of the budget counts it.
    return TpCommunication(0, (nccl + ipc + gather) * MIB + workspace, rank_data * MIB)
