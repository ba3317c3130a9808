"""What a vLLM process's non-torch memory is made of, step by step, on the GPU machine (one call, ~1.5 min).

vLLM reports "non-torch forward increase memory": what the device lost outside PyTorch's allocator between its
startup snapshot (the CUDA context made) and the end of profiling. This script takes the steps a TP1 startup
takes, one at a time, in one process, and prints after each the device memory in use outside PyTorch
(`total - free - reserved`), PyTorch's reserved bytes, and the context's stack-size limit (the driver raises
it, and reserves local memory for every resident thread, when a kernel needs a larger frame), so the growth
can be put on the step that makes it:

    python3 bench/gpu/measure_nontorch_steps.py --out OUT.json [--variants]

The first run (2026-12-02, H200) found about 66 MiB for the first bf16 matmul, and as much again for one on
a second stream and one in a second thread. These steps separate what that is made of: the cuBLAS handle
and PyTorch's workspace without a matmul; a second matmul of another shape (kernels loaded lazily); a
matmul with a bias (cuBLASLt); a stream that vLLM makes current (`utils/torch_utils.py::current_stream`);
a CUDA graph captured on a fresh stream as vLLM's `graph_capture` does; curand and the sampler's kernels.
`--variants` repeats the run in child processes under `CUBLAS_WORKSPACE_CONFIG=:0:0` (no workspace from
PyTorch: does cuBLAS then allocate its own?) and `CUBLASLT_WORKSPACE_SIZE=0`, each recorded apart. Only
PyTorch is needed; steps that need vLLM are skipped and say so.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

MIB = 1 << 20
CU_LIMIT_STACK_SIZE = 0
VARIANTS = {
    "workspace-zero": {"CUBLAS_WORKSPACE_CONFIG": ":0:0"},
    "lt-workspace-zero": {"CUBLASLT_WORKSPACE_SIZE": "0"},
}


def stack_limit() -> int | None:
    try:
        value = ctypes.c_size_t(0)
        status = ctypes.CDLL("libcuda.so.1").cuCtxGetLimit(ctypes.byref(value), CU_LIMIT_STACK_SIZE)
        return int(value.value) if status == 0 else None
    except OSError:
        return None


def reading() -> dict[str, Any]:
    free, total = torch.cuda.mem_get_info()
    reserved = torch.cuda.memory_reserved()
    return {
        "outside_torch_mib": round((total - free - reserved) / MIB, 1),
        "reserved_mib": round(reserved / MIB, 1),
        "stack_limit_bytes": stack_limit(),
    }


def steps() -> list[tuple[str, Callable[[], Any]]]:
    dev = torch.device("cuda")
    side = torch.cuda.Stream()  # made before any reading: a stream alone holds no device memory

    def matmul(m: int = 4096, k: int = 4096, n: int = 4096) -> Any:
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        return a @ b

    def blas_handle_only() -> Any:
        return torch.cuda.current_blas_handle()  # getCurrentCUDABlasHandle: handle, stream, workspace

    def linear_with_bias() -> Any:
        x = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
        w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
        return torch.nn.functional.linear(x, w, w[0])  # addmm: cuBLASLt with its own workspace

    def on_side_stream() -> Any:
        with torch.cuda.stream(side):
            out = matmul()
        torch.cuda.current_stream().wait_stream(side)
        return out

    def vllm_current_stream() -> Any:
        torch.cuda.set_stream(torch.cuda.Stream())  # what vllm.utils.torch_utils.current_stream() does
        out = matmul()
        torch.cuda.set_stream(torch.cuda.default_stream())
        return out

    def in_thread(use_new_stream: bool) -> Callable[[], Any]:
        def run() -> Any:
            kept: list[Any] = []

            def work() -> None:
                if use_new_stream:
                    with torch.cuda.stream(torch.cuda.Stream()):
                        kept.append(matmul())
                else:
                    kept.append(matmul())

            worker = threading.Thread(target=work)
            worker.start()
            worker.join()
            return kept

        return run

    def graph_capture_on_new_stream() -> Any:
        x = torch.randn(512, 4096, device=dev, dtype=torch.bfloat16)
        w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
        stream = torch.cuda.Stream()  # distributed/parallel_state.py::graph_capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(stream):
            y = x @ w  # warm-up on the capture stream, as vLLM's runners do
            with torch.cuda.graph(graph, stream=stream):
                y = x @ w
        graph.replay()
        return graph, y

    def sampler_kernels() -> Any:
        logits = torch.randn(256, 151936, device=dev, dtype=torch.float32)
        probs = logits.softmax(dim=-1)
        q = torch.empty_like(probs).exponential_()
        return probs.div(q).argmax(dim=-1), torch.topk(logits, 50, dim=-1)

    def vllm_custom_ops() -> Any:
        import vllm._custom_ops as ops  # noqa: F401  registers torch.ops._C

        x = torch.randn(8192, 4096, device=dev, dtype=torch.bfloat16)
        weight = torch.ones(4096, device=dev, dtype=torch.bfloat16)
        out = torch.empty_like(x)
        torch.ops._C.rms_norm(out, x, weight, 1e-6)
        gate_up = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        act = torch.empty(8192, 4096, device=dev, dtype=torch.bfloat16)
        torch.ops._C.silu_and_mul(act, gate_up)
        return out, act

    def flash_attention() -> Any:
        from vllm.vllm_flash_attn import flash_attn_varlen_func

        q = torch.randn(8192, 32, 128, device=dev, dtype=torch.bfloat16)
        k = torch.randn(8192, 8, 128, device=dev, dtype=torch.bfloat16)
        cu = torch.tensor([0, 4096, 8192], device=dev, dtype=torch.int32)
        return flash_attn_varlen_func(
            q,
            k,
            k,
            max_seqlen_q=4096,
            cu_seqlens_q=cu,
            max_seqlen_k=4096,
            cu_seqlens_k=cu,
            causal=True,
            fa_version=3,
        )

    def triton_kernel() -> Any:
        import triton
        import triton.language as tl

        @triton.jit
        def add(x_ptr: Any, y_ptr: Any, n: Any, BLOCK: tl.constexpr) -> None:
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

        x = torch.randn(1 << 20, device=dev)
        y = torch.empty_like(x)
        add[(x.numel() // 1024,)](x, y, x.numel(), BLOCK=1024)
        return y

    def triton_benchmark_buffer() -> Any:
        import triton.runtime.driver as driver

        return driver.active.get_empty_cache_for_benchmark()  # what do_bench zeroes between runs

    def compiled() -> Any:
        fn = torch.compile(lambda t: torch.nn.functional.silu(t) * t + 1)
        return fn(torch.randn(8192, 4096, device=dev, dtype=torch.bfloat16))

    def nccl_world_of_one() -> Any:
        import socket

        import torch.distributed as dist

        with (
            socket.socket() as free
        ):  # a port of its own: the variants' child processes run one after another
            free.bind(("127.0.0.1", 0))
            port = free.getsockname()[1]
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
        t = torch.ones(1024, device=dev)
        dist.all_reduce(t)
        return t

    return [
        ("context", lambda: torch.zeros(1, device=dev)),
        ("curand: randn", lambda: torch.randn(1024, 1024, device=dev)),
        ("cuBLAS handle and workspace, no matmul", blas_handle_only),
        ("first bf16 matmul (cuBLAS/cuBLASLt)", matmul),
        ("the same matmul again", matmul),
        ("a bf16 matmul of other shapes (8192x5120 @ 5120x25600)", lambda: matmul(8192, 5120, 25600)),
        (
            "an fp32 matmul (TF32 / cuBLASLt paths)",
            lambda: torch.randn(2048, 2048, device=dev) @ torch.randn(2048, 2048, device=dev),
        ),
        ("F.linear with a bias (cuBLASLt addmm)", linear_with_bias),
        ("a bf16 matmul on a second CUDA stream", on_side_stream),
        ("again on that second stream", on_side_stream),
        ("a bf16 matmul on a stream made current (vLLM's current_stream)", vllm_current_stream),
        ("a bf16 matmul in a second thread", in_thread(False)),
        ("a bf16 matmul in a third thread on its own stream", in_thread(True)),
        ("a CUDA graph of a matmul captured on a fresh stream", graph_capture_on_new_stream),
        ("sampler kernels: softmax, exponential_, argmax, topk", sampler_kernels),
        ("sort of 256 x 151,936 logits", lambda: torch.sort(torch.randn(256, 151936, device=dev), dim=-1)),
        ("vLLM custom ops: rms_norm, silu_and_mul", vllm_custom_ops),
        ("FlashAttention 3 varlen (vllm_flash_attn)", flash_attention),
        ("a Triton kernel", triton_kernel),
        ("Triton's benchmark cache buffer (do_bench)", triton_benchmark_buffer),
        ("torch.compile (Inductor) of a fused elementwise", compiled),
        ("NCCL process group of one rank, one all_reduce", nccl_world_of_one),
    ]


def measure() -> dict[str, Any]:
    torch.cuda.init()
    rows: list[dict[str, Any]] = []
    before: dict[str, Any] = {"outside_torch_mib": 0.0, "reserved_mib": 0.0}
    kept_all: list[Any] = []
    for name, step in steps():
        try:
            kept_all.append(step())
            torch.cuda.synchronize()
            error = None
        except Exception as exc:  # a step that cannot run here is recorded, the rest still measured
            error = f"{type(exc).__name__}: {exc}"[:300]
        now = reading()
        rows.append(
            {
                "step": name,
                **now,
                "growth_mib": round(now["outside_torch_mib"] - before["outside_torch_mib"], 1),
                "reserved_growth_mib": round(now["reserved_mib"] - before["reserved_mib"], 1),
                "error": error,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
        before = now
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(),
        "rows": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--variants", action="store_true", help="also run under each VARIANTS environment")
    args = parser.parse_args()
    facts = {"env": {k: os.environ.get(k) for v in VARIANTS.values() for k in v}, **measure()}
    if args.variants:
        facts["variants"] = {}
        for label, env in VARIANTS.items():
            child = args.out.with_name(f"{args.out.stem}-{label}.json")
            done = subprocess.run(
                [sys.executable, __file__, "--out", str(child)],
                env={**os.environ, **env},
                capture_output=True,
                text=True,
                timeout=240,
            )
            facts["variants"][label] = (
                json.loads(child.read_text()) if done.returncode == 0 else {"error": done.stderr[-1500:]}
            )
    args.out.write_text(json.dumps(facts, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
