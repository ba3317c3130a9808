"""Measure what CUDA-graph capture costs in device memory, the way vLLM captures, with PyTorch alone.

vLLM's graph memory has three parts, and this script measures each on the machine it runs on:

1. The executable graphs. `torch.cuda.CUDAGraph.capture_end` instantiates every captured graph, and the driver
   keeps memory for each executable graph and for each kernel node in it, outside PyTorch's allocator. Part
   `exec` captures G graphs of N kernels each (an elementwise kernel, a small cuBLAS matmul) into one shared
   pool, kernels that allocate nothing, and reads the free memory the driver reports: bytes per graph as a
   function of N give a cost per graph and a cost per kernel node.
2. PyTorch's allocator around a capture. Part `allocator` checks the rules vLLM's estimate relies on: whether
   entering `torch.cuda.graph` empties the regular allocator's cache (the eager warm-up run just before each
   capture), whether a block freed by one capture is reused by the next capture into the same pool, and how
   much the first cuBLAS call on a new stream (vLLM's `graph_capture` opens one) takes for its workspace.
3. vLLM's sequence. Part `model` replays `GPUModelRunner.profile_cudagraph_memory` and `capture_model`
   (vLLM 0.22, `v1/worker/gpu_model_runner.py`) on a synthetic decoder with a real model's shapes and weights
   shared across layers: piecewise graphs split at every attention (layers + 1 pieces, eager attention in
   between, the last piece's output dropped as `weak_ref_tensors` drops it), capture sizes largest first with
   one eager warm-up each, FULL decode graphs of the whole forward after them, all in one global pool on a
   stream of their own; FlashAttention 3's split-KV accumulators ([32 splits, tokens, heads, head dim] fp32,
   `vllm 0.22.0 v1/attention/backends/flash_attn.py`: "intermediate buffers of size [num_splits, num_heads,
   num_tokens, head_size] are allocated") are allocated and freed inside each FULL-mode attention. The
   profile pass samples the first two sizes per mode into a throwaway pool as vLLM does; the capture pass
   captures every size. The synthetic layers use eager PyTorch kernels, not Inductor's, so their activation
   tensors are close to but not the same as vLLM's.

Run on a machine with an NVIDIA GPU and PyTorch (no vLLM needed):
    python3 bench/gpu/measure_graph_memory.py --out graph-memory.json
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import platform
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from typing import Any
from unittest.mock import patch

import torch
import torch.nn.functional as F

MIB = 1 << 20
BF16 = torch.bfloat16
F32 = torch.float32
FA3_SPLITS = 32  # vllm 0.22.0 config/attention.py: flash_attn_max_num_splits_for_cuda_graph


def free_bytes() -> int:
    torch.cuda.synchronize()
    return int(torch.cuda.mem_get_info()[0])


def reserved_bytes() -> int:
    return int(torch.cuda.memory_reserved())


def settle() -> None:
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def environment() -> dict[str, Any]:
    props = torch.cuda.get_device_properties(0)
    driver = "unknown"
    with suppress(OSError):
        driver = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout.strip()
    enter = inspect.getsource(torch.cuda.graph.__enter__)
    return {
        "gpu": props.name,
        "total_memory_bytes": props.total_memory,
        "driver": driver,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "graph_enter_source": enter,
    }


# ---- part 1: executable graphs ----------------------------------------------------------------------------


def _kernel(kind: str) -> Callable[[], None]:
    if kind == "add":
        x = torch.zeros(1024, device="cuda", dtype=F32)

        def add() -> None:
            x.add_(1.0)

        return add
    a = torch.zeros(8, 512, device="cuda", dtype=BF16)
    b = torch.zeros(512, 512, device="cuda", dtype=BF16)
    out = torch.empty(8, 512, device="cuda", dtype=BF16)

    def mm() -> None:
        torch.mm(a, b, out=out)

    return mm


def exec_cost(kind: str, nodes: int, graphs: int) -> dict[str, Any]:
    """G graphs of N kernels into one pool: bytes the driver holds per graph (first graph apart)."""
    settle()
    kernel = _kernel(kind)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(nodes):
            kernel()
    torch.cuda.synchronize()
    pool = torch.cuda.graph_pool_handle()
    kept: list[torch.cuda.CUDAGraph] = []
    start = free_bytes()
    reserved0 = reserved_bytes()
    after_first = start
    t0 = time.perf_counter()
    for index in range(graphs):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool, stream=stream):
            for _ in range(nodes):
                kernel()
        kept.append(graph)
        if index == 0:
            after_first = free_bytes()
    end = free_bytes()
    result = {
        "kind": kind,
        "nodes": nodes,
        "graphs": graphs,
        "first_graph_bytes": start - after_first,
        "per_graph_bytes": (after_first - end) / (graphs - 1),
        "pool_reserved_bytes": reserved_bytes() - reserved0,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    del kept
    settle()
    result["released_bytes"] = free_bytes() - end
    return result


# ---- part 2: allocator rules around a capture -------------------------------------------------------------


def allocator_rules() -> dict[str, Any]:
    found: dict[str, Any] = {}
    settle()
    # the regular cache of an eager run just before a capture: released when the capture starts?
    stream = torch.cuda.Stream()
    pool = torch.cuda.graph_pool_handle()
    with torch.cuda.stream(stream):
        tmp = torch.empty(64 * MIB, device="cuda", dtype=torch.uint8)
        del tmp
    torch.cuda.synchronize()
    cached = reserved_bytes()
    x = torch.zeros(16, device="cuda")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=pool, stream=stream):
        x.add_(1)
        found["reserved_inside_capture_after_64mib_cached"] = reserved_bytes()
    found["reserved_before_capture_with_64mib_cached"] = cached
    del graph
    settle()
    # a block freed inside one capture: reused by a later allocation in the same capture?
    pool = torch.cuda.graph_pool_handle()
    r0 = reserved_bytes()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=pool, stream=stream):
        a = torch.empty(100 * MIB, device="cuda", dtype=torch.uint8)
        a.fill_(1)
        del a
        b = torch.empty(100 * MIB, device="cuda", dtype=torch.uint8)
        b.fill_(2)
        del b
    found["same_capture_two_100mib_freed_in_turn_reserved"] = reserved_bytes() - r0
    # ... and by the next capture into the same pool?
    graph2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph2, pool=pool, stream=stream):
        c = torch.empty(100 * MIB, device="cuda", dtype=torch.uint8)
        c.fill_(3)
        del c
    found["next_capture_same_pool_100mib_reserved"] = reserved_bytes() - r0
    # a larger block than the pool's free ones: a new segment
    graph3 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph3, pool=pool, stream=stream):
        d = torch.empty(300 * MIB, device="cuda", dtype=torch.uint8)
        d.fill_(4)
        del d
    found["then_300mib_capture_reserved"] = reserved_bytes() - r0
    del graph, graph2, graph3
    settle()
    # the cuBLAS workspace of a new stream: first eager matmul on it, then first matmul inside a capture
    for where in ("eager", "capture"):
        s = torch.cuda.Stream()
        a = torch.zeros(64, 64, device="cuda", dtype=BF16)
        out = torch.empty(64, 64, device="cuda", dtype=BF16)
        torch.cuda.synchronize()
        f0, r0 = free_bytes(), reserved_bytes()
        if where == "eager":
            with torch.cuda.stream(s):
                torch.mm(a, a, out=out)
        else:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=torch.cuda.graph_pool_handle(), stream=s):
                torch.mm(a, a, out=out)
        found[f"cublas_new_stream_{where}_free_drop"] = f0 - free_bytes()
        found[f"cublas_new_stream_{where}_reserved"] = reserved_bytes() - r0
    settle()
    return found


# ---- part 3: vLLM's sequence on a synthetic decoder -------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    name: str
    hidden: int
    intermediate: int  # dense MLP, or the expert's (moe_topk > 0)
    heads: int
    kv_heads: int
    head_dim: int
    layers: int
    sizes: tuple[int, ...]  # capture sizes
    full_up_to: int  # FULL decode graphs for sizes <= this (0: PIECEWISE only, a pooling model)
    moe_topk: int = 0
    experts: int = 0


def sizes_up_to(top: int) -> tuple[int, ...]:
    """vLLM 0.12+ default capture sizes up to `top` (config/vllm.py::_set_cudagraph_sizes)."""
    return (
        tuple(s for s in (1, 2, 4) if s <= top)
        + tuple(range(8, min(top + 1, 256), 8))
        + tuple(range(256, top + 1, 16))
    )


SHAPES = (
    Shape("qwen3-0.6b-pooling-128", 1024, 3072, 16, 8, 128, 28, sizes_up_to(128), 0),
    Shape("qwen3-0.6b-pooling-32", 1024, 3072, 16, 8, 128, 28, sizes_up_to(32), 0),
    Shape("qwen3-30b-a3b", 2048, 768, 32, 4, 128, 48, sizes_up_to(512), 512, moe_topk=8, experts=128),
    Shape("qwen3-32b", 5120, 25600, 64, 8, 128, 64, sizes_up_to(512), 512),
    Shape("qwen3-8b", 4096, 12288, 32, 8, 128, 36, sizes_up_to(512), 512),
    Shape("qwen3-14b", 5120, 17408, 40, 8, 128, 40, sizes_up_to(512), 512),
)


class Decoder:
    """Layers + 1 pieces split at attention; weights shared across layers (only activations matter here)."""

    def __init__(self, s: Shape) -> None:
        self.s = s
        dev = "cuda"
        q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
        self.q, self.kv = q, kv
        mlp_in = s.intermediate * (s.moe_topk or 1)
        self.w_qkv = torch.zeros(s.hidden, q + 2 * kv, device=dev, dtype=BF16)
        self.w_o = torch.zeros(q, s.hidden, device=dev, dtype=BF16)
        if s.moe_topk:
            self.w_router = torch.zeros(s.hidden, s.experts, device=dev, dtype=BF16)
            self.w_gu = torch.zeros(s.hidden, 2 * s.intermediate, device=dev, dtype=BF16)
            self.w_d = torch.zeros(s.intermediate, s.hidden, device=dev, dtype=BF16)
        else:
            self.w_gu = torch.zeros(s.hidden, 2 * mlp_in, device=dev, dtype=BF16)
            self.w_d = torch.zeros(mlp_in, s.hidden, device=dev, dtype=BF16)
        self.norm = torch.ones(s.hidden, device=dev, dtype=BF16)
        self.head_norm = torch.ones(s.head_dim, device=dev, dtype=BF16)
        self.inputs = torch.zeros(max(s.sizes), s.hidden, device=dev, dtype=BF16)
        self.accumulate = False  # FULL mode: FA3's split-KV accumulators inside attention

    def _mlp(self, h: torch.Tensor) -> torch.Tensor:
        s = self.s
        if not s.moe_topk:
            gu = h @ self.w_gu
            g, u = gu[:, : s.intermediate], gu[:, s.intermediate :]
            act = torch.empty_like(u)
            torch.mul(F.silu(g, inplace=True), u, out=act)
            del gu, g, u
            return act @ self.w_d
        # fused_moe's caches: [T*topk, 2I], [T*topk, I], [T, topk, H]; routed tokens stand in for experts
        tokens = h.shape[0]
        logits = h @ self.w_router
        weights, _ = torch.topk(logits.float().softmax(-1), s.moe_topk, dim=-1)
        del logits
        routed = h.repeat_interleave(s.moe_topk, dim=0)
        cache1 = routed @ self.w_gu
        del routed
        g, u = cache1[:, : s.intermediate], cache1[:, s.intermediate :]
        cache2 = torch.empty_like(u)
        torch.mul(F.silu(g, inplace=True), u, out=cache2)
        del cache1, g, u
        cache3 = (cache2 @ self.w_d).view(tokens, s.moe_topk, s.hidden)
        del cache2
        out = (cache3 * weights.to(BF16).unsqueeze(-1)).sum(dim=1)
        return out

    def _pre_attention(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        s = self.s
        h = x * self.norm
        qkv = h @ self.w_qkv
        del h
        tokens = x.shape[0]
        q = (qkv[:, : self.q].view(tokens, s.heads, s.head_dim) * self.head_norm).view(tokens, self.q)
        k = (qkv[:, self.q : self.q + self.kv].view(tokens, s.kv_heads, s.head_dim) * self.head_norm).view(
            tokens, self.kv
        )
        out = torch.empty(tokens, self.q, device="cuda", dtype=BF16)
        return q, k, out, x

    def piece(self, index: int, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if index == 0:
            (x,) = args
            return self._pre_attention(x.clone())
        out, residual = args
        x = out @ self.w_o + residual
        h = x * self.norm
        x = self._mlp(h) + x
        del h
        if index == self.s.layers:
            return (x * self.norm,)
        return self._pre_attention(x)

    def attention(self, q: torch.Tensor, k: torch.Tensor, out: torch.Tensor) -> None:
        """The split op, eager between pieces; FULL mode allocates FA3's accumulators as the kernel does."""
        if self.accumulate:
            tokens = q.shape[0]
            acc = torch.empty(FA3_SPLITS, tokens, self.s.heads, self.s.head_dim, device="cuda", dtype=F32)
            lse = torch.empty(FA3_SPLITS, self.s.heads, tokens, device="cuda", dtype=F32)
            acc.zero_()
            lse.zero_()
            del acc, lse
        out.copy_(q)

    def forward_eager(self, tokens: int) -> torch.Tensor:
        args: tuple[torch.Tensor, ...] = (self.inputs[:tokens],)
        for index in range(self.s.layers + 1):
            result = self.piece(index, *args)
            if index == self.s.layers:
                return result[0]
            q, k, out, residual = result
            self.attention(q, k, out)
            args = (out, residual)
        raise AssertionError("unreachable")


@contextmanager
def no_empty_cache() -> Iterator[None]:
    """vLLM's CUDAGraphWrapper patches `torch.accelerator.empty_cache` for every piece after the first."""
    with patch("torch.accelerator.empty_cache", lambda *a, **k: None):
        yield


def capture_piecewise(model: Decoder, tokens: int, pool: Any, stream: Any, kept: list[Any]) -> None:
    args: tuple[torch.Tensor, ...] = (model.inputs[:tokens],)
    for index in range(model.s.layers + 1):
        graph = torch.cuda.CUDAGraph()
        if index == 0:
            with torch.cuda.graph(graph, pool=pool, stream=stream):
                result = model.piece(index, *args)
        else:
            with no_empty_cache(), torch.cuda.graph(graph, pool=pool, stream=stream):
                result = model.piece(index, *args)
        kept.append(graph)
        if index == model.s.layers:
            del result  # weak_ref_tensors: the last piece's output goes back to the pool
            return
        q, k, out, residual = result
        model.attention(q, k, out)  # eager, outside the graphs
        args = (out, residual)


def capture_full(model: Decoder, tokens: int, pool: Any, stream: Any, kept: list[Any]) -> None:
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=pool, stream=stream):
        out = model.forward_eager(tokens)
        del out  # CUDAGraphWrapper keeps only a weak reference to the output
    kept.append(graph)


def run_sequence(model: Decoder, descs: list[tuple[str, int]], per_mode_limit: int | None) -> dict[str, Any]:
    """One `graph_capture` context: new stream, new pool, every (mode, size) largest first with a warm-up."""
    stream = torch.cuda.Stream()
    pool = torch.cuda.graph_pool_handle()
    kept: list[Any] = []
    steps: list[dict[str, Any]] = []
    settle()
    start, reserved0 = free_bytes(), reserved_bytes()
    seen: dict[str, int] = {}
    with torch.cuda.stream(stream):
        for mode, tokens in descs:
            if per_mode_limit is not None and seen.get(mode, 0) >= per_mode_limit:
                continue
            seen[mode] = seen.get(mode, 0) + 1
            model.accumulate = mode == "FULL"
            before = free_bytes()
            warm = model.forward_eager(tokens)  # one warm-up (cudagraph_num_of_warmups = 1)
            del warm
            if mode == "FULL":
                capture_full(model, tokens, pool, stream, kept)
            else:
                capture_piecewise(model, tokens, pool, stream, kept)
            after = free_bytes()
            steps.append(
                {
                    "mode": mode,
                    "tokens": tokens,
                    "free_drop_bytes": before - after,
                    "reserved_bytes": reserved_bytes() - reserved0,
                }
            )
    model.accumulate = False
    end, reserved_end = free_bytes(), reserved_bytes()
    result = {
        "graphs": len(kept),
        "total_free_drop_bytes": start - end,
        "pool_and_cache_reserved_bytes": reserved_end - reserved0,
        "steps": steps,
    }
    del kept
    settle()
    result["left_after_release_bytes"] = start - free_bytes()
    return result


def model_case(shape: Shape) -> dict[str, Any]:
    settle()
    model = Decoder(shape)
    for tokens in (max(shape.sizes), 1):  # compile-free eager warm-up, as profile_run leaves things
        model.forward_eager(tokens)
    settle()
    descending = sorted(shape.sizes, reverse=True)
    descs = [("PIECEWISE", t) for t in descending]
    descs += [("FULL", t) for t in descending if t <= shape.full_up_to]
    profile = run_sequence(model, descs, per_mode_limit=2)
    capture = run_sequence(model, descs, per_mode_limit=None)
    del model
    settle()
    return {"shape": asdict(shape), "profile": profile, "capture": capture}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", required=True)
    parser.add_argument("--budget-s", type=float, default=240.0)
    args = parser.parse_args()
    began = time.perf_counter()
    report: dict[str, Any] = {"environment": environment(), "exec": [], "allocator": {}, "models": []}

    def save() -> None:
        report["seconds"] = round(time.perf_counter() - began, 1)
        with open(args.out, "w") as handle:
            json.dump(report, handle, indent=1)

    save()
    for kind in ("add", "mm"):
        for nodes, graphs in ((1, 300), (8, 300), (64, 150), (512, 30)):
            try:
                report["exec"].append(exec_cost(kind, nodes, graphs))
            except Exception as exc:  # keep what was measured
                report["exec"].append({"kind": kind, "nodes": nodes, "error": repr(exc)})
            print(json.dumps(report["exec"][-1]), flush=True)
            save()
    try:
        report["allocator"] = allocator_rules()
    except Exception as exc:
        report["allocator"] = {"error": repr(exc)}
    print(json.dumps(report["allocator"]), flush=True)
    save()
    for shape in SHAPES:
        if time.perf_counter() - began > args.budget_s:
            report["models"].append({"shape": shape.name, "skipped": "budget"})
            continue
        t0 = time.perf_counter()
        try:
            case = model_case(shape)
        except Exception as exc:
            case = {"shape": shape.name, "error": repr(exc)}
        case["seconds"] = round(time.perf_counter() - t0, 1)
        report["models"].append(case)
        brief = {k: case.get(k) for k in ("seconds", "error")}
        for part in ("profile", "capture"):
            if part in case:
                brief[part] = {
                    "graphs": case[part]["graphs"],
                    "MiB": round(case[part]["total_free_drop_bytes"] / MIB, 1),
                    "first_steps_MiB": [
                        round(s["free_drop_bytes"] / MIB, 1) for s in case[part]["steps"][:2]
                    ],
                }
        print(shape.name, json.dumps(brief), flush=True)
        save()
    save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
