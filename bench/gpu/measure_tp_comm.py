"""Measure, per rank, the GPU memory that tensor parallelism adds to a vLLM worker, step by step.

N worker processes (one per GPU, each seeing every GPU, as vLLM's multiprocessing workers do; `--world-size`, 2 by
default) replay the start-up steps vLLM takes at `--tensor-parallel-size N`, in vLLM's order, without vLLM itself:

  1. CUDA context on `cuda:<rank>`.
  2. `torch.distributed.init_process_group("nccl")` without `device_id` (vLLM's default world group), then the
     coordinator groups `GroupCoordinator` builds with `new_group`: an NCCL device group and a gloo CPU group
     for the world, the TP group, and the size-1 PP and DP groups (`parallel_state.initialize_model_parallel`).
     ProcessGroupNCCL creates no NCCL communicator yet (lazy until the first collective on that group).
  3. vLLM's own NCCL communicator (`PyNcclCommunicator`): ctypes against the `libnccl.so.2` PyTorch loaded,
     `ncclGetUniqueId` on rank 0 (shared over the gloo group), `ncclCommInitRank` and a one-element warm-up
     all-reduce.
  4. torch symmetric memory of the size `SymmMemCommunicator` takes on compute capability 9.0 at the world size
     (64 MiB at 2 and 8, 32 at 4: `all_reduce_utils.py::SYMM_MEM_ALL_REDUCE_MAX_SIZES`), rendezvous on the gloo
     group.
  5. Custom all-reduce buffers (`CustomAllreduce.__init__`): two cudaMalloc'd IPC buffers (meta + 8 MiB and
     8 MiB; 16 MiB from vLLM 0.27), the peers' buffers opened with cudaIpcOpenMemHandle, and 8 MiB `rank_data`
     from PyTorch's allocator. From vLLM 0.27 also a 96 MiB symmetric-memory "MNNVL" buffer that is kept only
     when multicast works (`CustomAllreduce._init_mnnvl_buffer`).
  6. A second vLLM NCCL communicator (what an MoE model's EP group adds; every model in vLLM 0.9-0.13).
  7. cuBLAS/cuBLASLt handles (`torch.mm`, `F.linear` with bias; vLLM 0.33 does this before its snapshot).
  -- vLLM >= 0.11 takes its start-up memory snapshot here --
  8. The first all-gather on the TP NCCL device group, as `LogitsProcessor._gather_logits` does in the dummy
     sampler run of releases whose `CudaCommunicator` has no `all_gather` of its own (<= 0.24): this is where
     ProcessGroupNCCL creates its communicator.
  9. A 64 MiB all-reduce and an all-gather through vLLM's communicator (the profile run's collectives).
 10. A CUDA-graph-captured all-reduce through vLLM's communicator, replayed once; with `--graphs N`, N more
     graphs of one all-reduce each captured into one shared pool, as vLLM captures one graph per batch size
     (vLLM <= 0.10.1.1 turned NCCL's cuMem allocator off because of the memory such captures cost).

After every step each rank records `torch.cuda.mem_get_info()` (device-wide, driver level) and PyTorch's
reserved/allocated bytes; rank 0 also reads nvidia-smi's per-process figures at the snapshot point and at the end.
The whole sequence runs once per NCCL environment: vLLM's default since 0.10.2 (no NCCL variables set), the
`NCCL_CUMEM_ENABLE=0` that vLLM <= 0.10.1.1 sets on import, and each with `NCCL_NVLS_ENABLE=0`.

Run on a machine with N NVIDIA GPUs and PyTorch (no vLLM needed):
    python3 bench/gpu/measure_tp_comm.py --out tp-comm.json
    python3 bench/gpu/measure_tp_comm.py --world-size 4 --variants nvls_off,cumem_off_nvls_off --out tp4-comm.json
On machines that keep NVLink multicast off, run only the *nvls_off variants (the others would turn it on).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import glob
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

MIB = 1024**2
WORLD_SIZE = 2  # --world-size sets it, in the parent and in every worker

# vllm 0.11.0 .. 0.33.0 all_reduce_utils.py::SYMM_MEM_ALL_REDUCE_MAX_SIZES["9.0"], by world size
SYMM_MEM_MIB_SM90 = {2: 64, 4: 32, 6: 64, 8: 64}
CA_MAX_SIZE = 8 * MIB  # vllm custom_all_reduce.py::CustomAllreduce.__init__ max_size=8192 * 1024
CA_META_BYTES = 4 * 1024  # ops.meta_size(): a few KiB of synchronisation flags (rounded up by cudaMalloc)
CA_RANK_DATA_BYTES = 8 * MIB  # self.rank_data = torch.empty(8 * 1024 * 1024, dtype=torch.uint8)
CA_MNNVL_BYTES = 6 * 16 * MIB  # _init_mnnvl_buffer(max(8 MiB * 2, 16 MiB)) * 6 at world size 2 (0.27+)
LOGITS_ROWS = (
    256  # the dummy sampler run's rows (min(max_num_seqs, max_num_batched_tokens)) for a small server
)
VOCAB = 151_936  # a Qwen-sized vocabulary, split over the ranks

VARIANTS: dict[str, dict[str, str]] = {
    "vllm_default": {},  # vLLM >= 0.10.2 sets no NCCL variable
    "cumem_off": {"NCCL_CUMEM_ENABLE": "0"},  # vLLM <= 0.10.1.1 (vllm/env_override.py, vllm/__init__.py)
    "nvls_off": {"NCCL_NVLS_ENABLE": "0"},
    "cumem_off_nvls_off": {"NCCL_CUMEM_ENABLE": "0", "NCCL_NVLS_ENABLE": "0"},
    # GPUs without peer-to-peer access (PCIe cards in separate pods or behind a switch that blocks it): NCCL
    # stages through host memory, and vLLM turns its custom all-reduce off ("lacks GPU P2P capability").
    "p2p_off": {"NCCL_P2P_DISABLE": "1"},
    "p2p_off_cumem_off": {"NCCL_P2P_DISABLE": "1", "NCCL_CUMEM_ENABLE": "0"},
}
NCCL_VARIABLES = ("NCCL_CUMEM_ENABLE", "NCCL_NVLS_ENABLE", "NCCL_P2P_DISABLE")


# ---------------------------------------------------------------------------------------------- worker side


class NcclUniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 128)]


class CudaIpcMemHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_byte * 64)]


NCCL_FLOAT32 = 7
NCCL_BFLOAT16 = 9
NCCL_SUM = 0


def _library(sonames: list[str], patterns: list[str]) -> ctypes.CDLL:
    """The library PyTorch already loaded (by soname, as vLLM opens `libnccl.so.2`), else a wheel's copy."""
    for soname in sonames:
        try:
            return ctypes.CDLL(soname)
        except OSError:
            continue
    for root in sys.path:
        for pattern in patterns:
            found = sorted(glob.glob(os.path.join(root, pattern)))
            if found:
                return ctypes.CDLL(found[0])
    raise OSError(f"none of {sonames} found")


def _loaded_libraries(fragment: str) -> list[str]:
    """Paths of the shared objects this process has mapped whose name contains `fragment`."""
    with open("/proc/self/maps") as maps:
        return sorted(
            {
                line.split()[-1]
                for line in maps
                if fragment in line and line.rstrip().endswith((".so", ".2", ".12", ".13"))
            }
        )


class Nccl:
    """The few NCCL calls `PyNcclCommunicator` makes, through ctypes."""

    def __init__(self) -> None:
        self.lib = _library(["libnccl.so.2"], ["nvidia/nccl/lib/libnccl.so.2", "nvidia/*/lib/libnccl.so.2"])
        lib = self.lib
        lib.ncclGetVersion.argtypes = [ctypes.POINTER(ctypes.c_int)]
        lib.ncclGetUniqueId.argtypes = [ctypes.POINTER(NcclUniqueId)]
        lib.ncclCommInitRank.argtypes = [
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.c_int,
            NcclUniqueId,
            ctypes.c_int,
        ]
        lib.ncclAllReduce.argtypes = (
            [ctypes.c_void_p] * 2 + [ctypes.c_size_t, ctypes.c_int, ctypes.c_int] + [ctypes.c_void_p] * 2
        )
        lib.ncclAllGather.argtypes = (
            [ctypes.c_void_p] * 2 + [ctypes.c_size_t, ctypes.c_int] + [ctypes.c_void_p] * 2
        )

    def check(self, result: int, call: str) -> None:
        if result != 0:
            raise RuntimeError(f"{call} returned NCCL error {result}")

    def version(self) -> int:
        value = ctypes.c_int()
        self.check(self.lib.ncclGetVersion(ctypes.byref(value)), "ncclGetVersion")
        return value.value

    def unique_id(self) -> bytes:
        uid = NcclUniqueId()
        self.check(self.lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        return bytes(uid.internal)

    def init_rank(self, world: int, uid_bytes: bytes, rank: int) -> ctypes.c_void_p:
        uid = NcclUniqueId()
        ctypes.memmove(uid.internal, uid_bytes, 128)
        comm = ctypes.c_void_p()
        self.check(self.lib.ncclCommInitRank(ctypes.byref(comm), world, uid, rank), "ncclCommInitRank")
        return comm

    def all_reduce(self, tensor: Any, comm: ctypes.c_void_p, stream: int, dtype: int) -> None:
        ptr = tensor.data_ptr()
        self.check(
            self.lib.ncclAllReduce(ptr, ptr, tensor.numel(), dtype, NCCL_SUM, comm, stream), "ncclAllReduce"
        )

    def all_gather(self, out: Any, inp: Any, comm: ctypes.c_void_p, stream: int, dtype: int) -> None:
        self.check(
            self.lib.ncclAllGather(inp.data_ptr(), out.data_ptr(), inp.numel(), dtype, comm, stream),
            "ncclAllGather",
        )


class CudaRuntime:
    """cudaMalloc and the IPC calls vLLM's custom all-reduce makes (`create_shared_buffer`)."""

    def __init__(self) -> None:
        self.lib = _library(
            ["libcudart.so.13", "libcudart.so.12", "libcudart.so"],
            [
                "nvidia/cuda_runtime/lib/libcudart.so*",
                "nvidia/*/lib/libcudart.so*",
                "torch/lib/libcudart*.so*",
            ],
        )
        lib = self.lib
        lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        lib.cudaMemset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
        lib.cudaIpcGetMemHandle.argtypes = [ctypes.POINTER(CudaIpcMemHandle), ctypes.c_void_p]
        lib.cudaIpcOpenMemHandle.argtypes = [ctypes.POINTER(ctypes.c_void_p), CudaIpcMemHandle, ctypes.c_uint]

    def check(self, result: int, call: str) -> None:
        if result != 0:
            raise RuntimeError(f"{call} returned CUDA error {result}")

    def malloc(self, size: int) -> int:
        ptr = ctypes.c_void_p()
        self.check(self.lib.cudaMalloc(ctypes.byref(ptr), size), "cudaMalloc")
        self.check(self.lib.cudaMemset(ptr, 0, size), "cudaMemset")
        return int(ptr.value or 0)

    def ipc_handle(self, ptr: int) -> bytes:
        handle = CudaIpcMemHandle()
        self.check(self.lib.cudaIpcGetMemHandle(ctypes.byref(handle), ptr), "cudaIpcGetMemHandle")
        return bytes(handle.reserved)

    def open_handle(self, raw: bytes) -> int:
        handle = CudaIpcMemHandle()
        ctypes.memmove(handle.reserved, raw, 64)
        ptr = ctypes.c_void_p()
        lazy_enable_peer_access = 1
        self.check(
            self.lib.cudaIpcOpenMemHandle(ctypes.byref(ptr), handle, lazy_enable_peer_access),
            "cudaIpcOpenMemHandle",
        )
        return int(ptr.value or 0)


@dataclass
class Recorder:
    rank: int
    rows: list[dict[str, Any]]

    def step(self, name: str, **extra: Any) -> None:
        import torch

        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        row = {
            "step": name,
            "rank": self.rank,
            "used_mib": round((total - free) / MIB, 1),
            "reserved_mib": round(torch.cuda.memory_reserved() / MIB, 1),
            "allocated_mib": round(torch.cuda.memory_allocated() / MIB, 1),
            "t": round(time.time(), 2),
            **extra,
        }
        self.rows.append(row)
        print("ROW " + json.dumps(row), flush=True)


def _smi_processes() -> list[str]:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-compute-apps=pid,gpu_uuid,used_memory", "--format=csv,noheader"],
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError) as error:
        return [f"nvidia-smi failed: {error}"]
    return [line.strip() for line in out.splitlines() if line.strip()]


def _symmetric_buffer(size: int, group_name: str, device: Any) -> tuple[Any, Any, int]:
    """A torch symmetric-memory buffer, its rendezvous handle and its multicast pointer (0: no multicast)."""
    import torch
    import torch.distributed._symmetric_memory as symm

    enable = getattr(symm, "enable_symm_mem_for_group", None)
    if enable is not None:
        with contextlib.suppress(Exception):  # deprecated, or already enabled, on newer PyTorch
            enable(group_name)
    buffer = symm.empty(size // 2, dtype=torch.bfloat16, device=device)
    handle = symm.rendezvous(buffer, group_name)
    return buffer, handle, int(getattr(handle, "multicast_ptr", 0) or 0)


def worker(rank: int, port: int, graphs: int) -> None:
    import torch
    import torch.distributed as dist

    ranks = list(range(WORLD_SIZE))
    symm_mem_bytes = SYMM_MEM_MIB_SM90.get(WORLD_SIZE, 64) * MIB
    vocab_shard = VOCAB // WORLD_SIZE

    keep: list[Any] = []  # everything a step creates stays alive, as in vLLM
    rec = Recorder(rank, [])
    device = torch.device(f"cuda:{rank}")
    torch.cuda.set_device(device)
    torch.zeros(1, device=device)
    rec.step("context")

    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", world_size=WORLD_SIZE, rank=rank)
    rec.step("init_process_group_nccl")

    def coordinator(groups: list[list[int]]) -> tuple[Any, Any]:
        mine_device, mine_cpu = None, None
        for ranks in groups:
            device_group = dist.new_group(ranks, backend="nccl")
            cpu_group = dist.new_group(ranks, backend="gloo")
            if rank in ranks:
                mine_device, mine_cpu = device_group, cpu_group
        return mine_device, mine_cpu

    coordinator([ranks])  # world
    tp_device, tp_cpu = coordinator([ranks])  # tp
    coordinator([[r] for r in ranks])  # pp
    coordinator([[r] for r in ranks])  # dp
    rec.step("new_groups_world_tp_pp_dp")

    nccl = Nccl()
    stream = torch.cuda.current_stream().cuda_stream

    def pynccl_comm() -> ctypes.c_void_p:
        box: list[Any] = [nccl.unique_id() if rank == 0 else None]
        dist.broadcast_object_list(box, src=0, group=tp_cpu)
        comm = nccl.init_rank(WORLD_SIZE, box[0], rank)
        warm = torch.zeros(1, device=device)
        nccl.all_reduce(warm, comm, torch.cuda.current_stream().cuda_stream, NCCL_FLOAT32)
        torch.cuda.current_stream().synchronize()
        return comm

    tp_comm = pynccl_comm()
    rec.step("pynccl_tp_init_and_warmup", nccl_version=nccl.version(), libnccl=_loaded_libraries("libnccl"))

    try:
        keep.append(_symmetric_buffer(symm_mem_bytes, tp_cpu.group_name, device))
        rec.step("symm_mem", mib=symm_mem_bytes // MIB, multicast=bool(keep[-1][2]))
    except Exception as error:
        rec.step("symm_mem", mib=symm_mem_bytes // MIB, error=repr(error)[:300])

    try:
        cudart = CudaRuntime()
        for size in (CA_META_BYTES + CA_MAX_SIZE, CA_MAX_SIZE):
            ptr = cudart.malloc(size)
            handles: list[Any] = [None] * WORLD_SIZE
            dist.all_gather_object(handles, cudart.ipc_handle(ptr), group=tp_cpu)
            peers = [cudart.open_handle(h) for i, h in enumerate(handles) if i != rank]
            keep.append((ptr, peers))
        rec.step("custom_ar_ipc_buffers")
        keep.append(torch.empty(CA_RANK_DATA_BYTES, dtype=torch.uint8, device=device))
        rec.step("custom_ar_rank_data")
        ptr = cudart.malloc(8 * MIB)  # 0.27+: the legacy buffer grows from 8 to 16 MiB
        handles = [None] * WORLD_SIZE
        dist.all_gather_object(handles, cudart.ipc_handle(ptr), group=tp_cpu)
        keep.append((ptr, [cudart.open_handle(h) for i, h in enumerate(handles) if i != rank]))
        rec.step("custom_ar_extra_8mib_0_27")
    except Exception as error:
        rec.step("custom_ar_ipc_buffers", error=repr(error)[:300])

    try:
        buffer, handle, multicast = _symmetric_buffer(CA_MNNVL_BYTES, tp_cpu.group_name, device)
        rec.step("custom_ar_mnnvl_96mib_allocated", multicast=bool(multicast))
        if multicast:
            keep.append((buffer, handle))
        else:  # vLLM returns without keeping it: the buffer goes out of scope
            del buffer, handle
            torch.cuda.empty_cache()
        rec.step("custom_ar_mnnvl_after_keep_or_drop", multicast=bool(multicast))
    except Exception as error:
        rec.step("custom_ar_mnnvl_96mib_allocated", error=repr(error)[:300])

    ep_comm = pynccl_comm()
    rec.step("pynccl_second_comm_ep")

    x = torch.ones(16, 16, dtype=torch.bfloat16, device=device)
    torch.mm(x, x)
    torch.nn.functional.linear(x, x, x[0])
    del x
    torch.cuda.empty_cache()
    rec.step("cublas_handles")
    dist.barrier(group=tp_cpu)
    smi_at_snapshot = _smi_processes() if rank == 0 else []
    rec.step("snapshot_point", smi=smi_at_snapshot)

    shard = torch.randn(LOGITS_ROWS, vocab_shard, dtype=torch.bfloat16, device=device)
    gathered = torch.empty(LOGITS_ROWS * WORLD_SIZE, vocab_shard, dtype=torch.bfloat16, device=device)
    dist.all_gather_into_tensor(gathered, shard, group=tp_device)
    rec.step("torch_pg_first_all_gather_live")
    del shard, gathered
    torch.cuda.empty_cache()
    rec.step("torch_pg_first_all_gather_freed")

    big = torch.ones(32 * MIB, dtype=torch.bfloat16, device=device)  # 64 MiB
    nccl.all_reduce(big, tp_comm, stream, NCCL_BFLOAT16)
    rec.step("pynccl_all_reduce_64mib_live")
    out = torch.empty(WORLD_SIZE * big.numel(), dtype=torch.bfloat16, device=device)
    nccl.all_gather(out, big, tp_comm, stream, NCCL_BFLOAT16)
    rec.step("pynccl_all_gather_live")
    del big, out
    torch.cuda.empty_cache()
    rec.step("pynccl_collectives_freed")

    try:
        small = torch.ones(4096 * 16, dtype=torch.bfloat16, device=device)
        graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            nccl.all_reduce(
                small, tp_comm, side.cuda_stream, NCCL_BFLOAT16
            )  # eager warm-up on the side stream
        torch.cuda.current_stream().wait_stream(side)
        with torch.cuda.graph(graph):
            nccl.all_reduce(small, tp_comm, torch.cuda.current_stream().cuda_stream, NCCL_BFLOAT16)
        graph.replay()
        keep.append((small, graph))
        rec.step("cuda_graph_pynccl_all_reduce")
    except Exception as error:
        rec.step("cuda_graph_pynccl_all_reduce", error=repr(error)[:300])

    if graphs:
        # vLLM captures one graph per batch size into one shared pool; each holds the layer's collectives.
        try:
            pool = torch.cuda.graph_pool_handle()
            inputs = [torch.ones(4096 * (i + 1), dtype=torch.bfloat16, device=device) for i in range(graphs)]
            torch.cuda.synchronize()
            rec.step(f"cuda_graphs_inputs_x{graphs}")
            for tensor in inputs:
                captured = torch.cuda.CUDAGraph()
                with torch.cuda.graph(captured, pool=pool):
                    nccl.all_reduce(tensor, tp_comm, torch.cuda.current_stream().cuda_stream, NCCL_BFLOAT16)
                keep.append(captured)
            keep.append(inputs)
            rec.step(f"cuda_graphs_pynccl_x{graphs}")
        except Exception as error:
            rec.step(f"cuda_graphs_pynccl_x{graphs}", error=repr(error)[:300])

    dist.barrier(group=tp_cpu)
    rec.step("end", smi=_smi_processes() if rank == 0 else [])
    keep.append(ep_comm)
    dist.barrier(group=tp_cpu)
    print("DONE", flush=True)
    os._exit(0)  # skip NCCL teardown: the parent only needs the rows


# ---------------------------------------------------------------------------------------------- parent side


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_variant(env_extra: dict[str, str], timeout: float, graphs: int) -> dict[str, Any]:
    port = _free_port()
    base = {k: v for k, v in os.environ.items() if k not in NCCL_VARIABLES}
    env = {**base, **env_extra, "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NVLS,ENV"}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                os.path.abspath(__file__),
                *("--worker", str(rank), "--port", str(port), "--graphs", str(graphs)),
                *("--world-size", str(WORLD_SIZE)),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(WORLD_SIZE)
    ]
    outputs: list[tuple[str, str]] = []
    for proc in procs:
        try:
            outputs.append(proc.communicate(timeout=timeout))
        except subprocess.TimeoutExpired:
            proc.kill()  # only the worker this script started
            outputs.append(proc.communicate())
    rows = [
        json.loads(line[4:]) for out, _ in outputs for line in out.splitlines() if line.startswith("ROW ")
    ]
    nccl_lines = [
        line.strip()
        for _, err in outputs[:1]
        for line in err.splitlines()
        if "NVLS" in line or "cuMem" in line or "NCCL version" in line or "CUMEM" in line
    ][:60]
    errors = [err[-2000:] for out, err in outputs if "DONE" not in out]
    return {"env": env_extra, "rows": rows, "nccl_info_rank0": nccl_lines, "errors": errors}


def _deltas(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """MiB each step added to the device's used memory, per rank."""
    out: dict[str, dict[str, float]] = {}
    for rank in range(WORLD_SIZE):
        previous = 0.0
        for row in (r for r in rows if r["rank"] == rank):
            out.setdefault(row["step"], {})[f"rank{rank}"] = round(row["used_mib"] - previous, 1)
            previous = row["used_mib"]
    return out


def _environment() -> dict[str, Any]:
    info: dict[str, Any] = {"python": sys.version.split()[0]}
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_cuda"] = torch.version.cuda
        info["torch_nccl"] = ".".join(str(p) for p in torch.cuda.nccl.version())
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        info["capability"] = list(torch.cuda.get_device_capability(0))
        info["p2p_0_1"] = torch.cuda.can_device_access_peer(0, 1) if torch.cuda.device_count() > 1 else None
    except Exception as error:
        info["torch_error"] = repr(error)
    for key, args in {
        "driver": ["nvidia-smi", "--query-gpu=driver_version,memory.total", "--format=csv,noheader"],
        "topology": ["nvidia-smi", "topo", "-m"],
    }.items():
        try:
            info[key] = subprocess.run(
                args, check=True, capture_output=True, text=True, timeout=30
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError) as error:
            info[key] = f"failed: {error}"
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="tp-comm.json")
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help="comma-separated subset of the variants"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per variant")
    parser.add_argument(
        "--graphs", type=int, default=0, help="also capture this many graphs of one all-reduce"
    )
    parser.add_argument(
        "--world-size", type=int, default=2, help="ranks, one per GPU (2, 4, 8: vLLM's TP sizes)"
    )
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global WORLD_SIZE
    WORLD_SIZE = args.world_size
    if args.worker is not None:
        worker(args.worker, args.port, args.graphs)
        return
    names = args.variants.split(",")
    if (
        os.environ.get("NCCL_NVLS_ENABLE") == "0"
    ):  # the machine keeps NVLink multicast off: so must every variant
        turning_on = [n for n in names if VARIANTS[n].get("NCCL_NVLS_ENABLE") != "0"]
        if turning_on:
            sys.exit(
                f"this machine keeps NVLink multicast off (NCCL_NVLS_ENABLE=0), and {', '.join(turning_on)} would "
                f"run without it: choose among {', '.join(n for n in VARIANTS if 'nvls_off' in n)}"
            )
    result: dict[str, Any] = {"environment": _environment(), "world_size": WORLD_SIZE, "variants": {}}
    for name in names:
        started = time.time()
        run = _run_variant(VARIANTS[name], args.timeout, args.graphs)
        run["seconds"] = round(time.time() - started, 1)
        run["delta_mib"] = _deltas(run["rows"])
        result["variants"][name] = run
        print(name, json.dumps(run["delta_mib"]), flush=True)
        with open(args.out, "w") as handle:
            json.dump(result, handle, indent=1)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
