"""What a vLLM process's non-torch memory is made of, step by step, on the GPU machine (one call, ~1 min).

vLLM reports "non-torch forward increase memory": what the device lost outside PyTorch's allocator between its
startup snapshot (the CUDA context made) and the end of profiling. This script takes the steps a TP1 startup takes,
one at a time, in one process with the unpacked wheel set on PYTHONPATH, and prints after each the device memory
in use outside PyTorch (`total - free - reserved`), so the growth can be put on the step that makes it:

    python3 bench/gpu/measure_nontorch_steps.py --out OUT.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

MIB = 1 << 20


def outside_torch_mib() -> float:
    free, total = torch.cuda.mem_get_info()
    return (total - free - torch.cuda.memory_reserved()) / MIB


def steps() -> list[tuple[str, Callable[[], Any]]]:
    dev = torch.device("cuda")

    def matmul() -> Any:
        a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
        return a @ a

    def matmul_on_second_stream() -> Any:
        with torch.cuda.stream(torch.cuda.Stream()):
            return matmul()

    def matmul_in_second_thread() -> Any:
        import threading

        kept: list[Any] = []
        worker = threading.Thread(target=lambda: kept.append(matmul()))
        worker.start()
        worker.join()
        return kept

    def fp32_matmul() -> Any:
        a = torch.randn(2048, 2048, device=dev, dtype=torch.float32)
        return a @ a

    def import_vllm() -> Any:
        import vllm
        import vllm._C  # noqa: F401

        return None

    def custom_op() -> Any:
        x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        out = torch.empty(8192, 4096, device=dev, dtype=torch.bfloat16)
        torch.ops._C.silu_and_mul(out, x)
        return out

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

    def nccl_world_of_one() -> Any:
        import os

        import torch.distributed as dist

        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
        t = torch.ones(1024, device=dev)
        dist.all_reduce(t)
        return t

    def sort_logits() -> Any:
        logits = torch.randn(256, 151936, device=dev, dtype=torch.float32)
        return torch.sort(logits, dim=-1)

    def triton_kernel() -> Any:
        import triton
        import triton.language as tl

        @triton.jit
        def add(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

        x = torch.randn(1 << 20, device=dev)
        y = torch.empty_like(x)
        add[(x.numel() // 1024,)](x, y, x.numel(), BLOCK=1024)
        return y

    def compiled() -> Any:
        fn = torch.compile(lambda t: torch.nn.functional.silu(t) * t + 1)
        return fn(torch.randn(8192, 4096, device=dev, dtype=torch.bfloat16))

    return [
        ("context", lambda: torch.zeros(1, device=dev)),
        ("first bf16 matmul (cuBLAS/cuBLASLt)", matmul),
        ("a bf16 matmul on a second CUDA stream", matmul_on_second_stream),
        ("a bf16 matmul in a second thread", matmul_in_second_thread),
        ("an fp32 matmul (TF32 / cuBLASLt paths)", fp32_matmul),
        ("import vllm and vllm._C", import_vllm),
        ("vLLM silu_and_mul custom op", custom_op),
        ("FlashAttention 3 varlen (vllm_flash_attn)", flash_attention),
        ("sort of 256 x 151,936 logits", sort_logits),
        ("NCCL process group of one rank, one all_reduce", nccl_world_of_one),
        ("a Triton kernel", triton_kernel),
        ("torch.compile (Inductor) of a fused elementwise", compiled),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.cuda.init()
    rows: list[dict[str, Any]] = []
    before = 0.0
    for name, step in steps():
        try:
            kept = step()
            torch.cuda.synchronize()
            error = None
        except Exception as exc:  # a step that cannot run here is recorded, the rest still measured
            kept, error = None, f"{type(exc).__name__}: {exc}"[:300]
        now = outside_torch_mib()
        rows.append(
            {
                "step": name,
                "outside_torch_mib": round(now, 1),
                "growth_mib": round(now - before, 1),
                "error": error,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
        before = now
        del kept
    facts = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows}
    args.out.write_text(json.dumps(facts, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
