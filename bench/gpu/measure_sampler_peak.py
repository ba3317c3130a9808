"""Measure the GPU memory vLLM's dummy sampler run peaks at, per logit, for each release's sampler path.

`GPUModelRunner.profile_run` ends with `_dummy_sampler_run`: logits for `rows = min(max_num_seqs,
max_num_batched_tokens)` dummy requests over the whole vocabulary, sampled with temperature 0.5, top-p 0.9 and
top-k = vocab - 1 (so both filters run). Its peak is part of the activation figure vLLM takes off the KV pool,
and its size depends on which top-k/top-p implementation the release picks. This script replays each path with
the same PyTorch operations vLLM's Python code performs, holding the same tensors alive, and records the
allocator's peak above the starting point, divided by rows x vocab. No vLLM is needed.

Paths (`vllm <version> v1/sample/ops/topk_topp_sampler.py::TopKTopPSampler.__init__`, `v1/sample/sampler.py`):
  flashinfer_probs    0.8.x with FlashInfer < 0.2.3 (official images): fp32 logits, softmax, FlashInfer
                      samples from the probabilities (its kernel allocates only the sampled ids).
  flashinfer_logits   0.9.0-0.11.0 with FlashInfer >= 0.2.3: `top_k_top_p_sampling_from_logits` = a masked copy
                      of the fp32 logits (`top_k_mask_logits`) and its softmax.
  sort                0.11.1-0.16 (and any release without FlashInfer): `apply_top_k_top_p` sorts the logits.
  sort_0_8_0          0.8.0-0.8.2's sort, whose cumulative sum is a new tensor (0.8.3 sums in place).
  triton              0.17+: `apply_top_k_top_p_triton` masks in place; its only allocation is a cached
                      per-program buffer of min(next_pow2(min(SMs, rows)), SMs) x vocab fp32 values, kept
                      between calls (`_TRITON_BUFFER_CACHE`). The kernel itself is not run: the replay
                      allocates that buffer, as the function does, and leaves the logits in place.
  flashinfer_then_native  0.21+: the FlashInfer path, then a second call with a generator that takes the
                      native (Triton) path (`_dummy_sampler_run`: "Also warm forward_native").
  v2_fp32_copy / v2_in_place  the V2 runner's sampler (`v1/worker/gpu/sample/sampler.py`): a greedy dummy
                      batch; 0.18-0.25 copy the logits to fp32 first, 0.26+ do not.
Speculative decoding adds a branch with one draft token per request (`_dummy_sampler_run`), measured beside
the plain run it follows:
  spec_bf16_target_softmax  0.8.1-0.8.5: bf16 target logits, a fused fp32 softmax (`compiled_softmax`), noise.
  spec_bf16_target_sorted   0.9.0-0.11.0: bf16 target logits, sorted top-k/top-p on them, softmax, noise.
  spec_two_rows_bf16_clone  0.11.1-0.13: logits for rows x 2, bonus sampler with a bf16 raw copy, target
                      logits cast to fp32 and filtered in place (sorted top-k/top-p), softmax, noise.
  spec_two_rows_fp32_clone  0.14-0.16: as above with an fp32 raw copy, and the fp32 target logits kept
                      (`raw_target_logits`, for logprobs) beside the clone that is filtered.
  spec_two_rows_triton      0.17+: as 0.14 with the Triton top-k/top-p.

Run on a machine with an NVIDIA GPU and PyTorch:
    python3 bench/gpu/measure_sampler_peak.py --out sampler-peak.json
"""

from __future__ import annotations

import argparse
import json
import platform
from collections.abc import Callable
from typing import Any

import torch

BF16 = torch.bfloat16
F32 = torch.float32
QWEN_VOCAB = 152_064  # Qwen2.5 (padded to 64)
QWEN36_VOCAB = 248_320  # Qwen3.5/3.6
LLAMA3_VOCAB = 128_256


def _dev() -> torch.device:
    return torch.device("cuda")


def _metadata(rows: int, vocab: int) -> dict[str, torch.Tensor]:
    """The dummy run's sampling parameters: temperature 0.5, top-p 0.9, top-k vocab - 1."""
    return {
        "temperature": torch.full((rows,), 0.5, device=_dev()),
        "top_p": torch.full((rows,), 0.9, device=_dev()),
        "top_k": torch.full((rows,), vocab - 1, device=_dev(), dtype=torch.int64),
    }


def _random_sample(probs: torch.Tensor) -> torch.Tensor:
    """`v1/sample/ops/topk_topp_sampler.py::random_sample`: exponential noise of the probabilities' size."""
    noise = torch.empty_like(probs)
    noise.exponential_()
    return probs.div_(noise).argmax(dim=-1)


def _sort_top_k_top_p(logits: torch.Tensor, meta: dict[str, torch.Tensor], *, cumsum_in_place: bool) -> Any:
    """`apply_top_k_top_p` (PyTorch): sort, mask below the k-th value, softmax, cumulative sum, mask, scatter."""
    logits_sort, logits_idx = logits.sort(dim=-1, descending=False)
    kth = logits_sort.size(1) - meta["top_k"]
    threshold = logits_sort.gather(1, kth.unsqueeze(dim=1))
    logits_sort.masked_fill_(logits_sort < threshold, -float("inf"))
    probs_sort = logits_sort.softmax(dim=-1)
    probs_sum = torch.cumsum(probs_sort, dim=-1, out=probs_sort) if cumsum_in_place else probs_sort.cumsum(-1)
    top_p_mask = probs_sum <= 1 - meta["top_p"].unsqueeze(dim=1)
    top_p_mask[:, -1] = False
    logits_sort.masked_fill_(top_p_mask, -float("inf"))
    return logits_sort.scatter(dim=-1, index=logits_idx, src=logits_sort)


_TRITON_BUFFER: dict[int, torch.Tensor] = {}


def _triton_top_k_top_p(logits: torch.Tensor, sm_count: int) -> torch.Tensor:
    """`apply_top_k_top_p_triton`'s allocations: its cached per-program buffer; the logits are masked in place."""
    programs = min(sm_count, logits.shape[0])
    size = min(1 << (programs - 1).bit_length(), sm_count)
    buffer = _TRITON_BUFFER.get(logits.shape[1])
    if buffer is None or buffer.shape[0] < programs:
        _TRITON_BUFFER[logits.shape[1]] = logits.new_empty((size, logits.shape[1]))
    return logits


def _flashinfer_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """`top_k_top_p_sampling_from_logits` (top_k_first): a masked copy of the logits, then their softmax."""
    masked = torch.empty_like(logits).copy_(logits)
    probs = torch.softmax(masked, dim=-1)
    return probs.argmax(dim=-1)


def _sampler(logits_bf16: torch.Tensor, meta: dict[str, torch.Tensor], path: str, sm_count: int) -> Any:
    """`Sampler.forward` for one path: fp32 logits, greedy argmax, temperature in place, then top-k/top-p."""
    logits = logits_bf16.to(F32)
    greedy = logits.argmax(dim=-1)
    logits.div_(meta["temperature"].unsqueeze(1))
    if path == "flashinfer_probs":
        probs = logits.softmax(dim=-1, dtype=F32)
        sampled = probs.argmax(dim=-1)  # FlashInfer's kernel writes only the sampled ids
    elif path == "flashinfer_logits":
        sampled = _flashinfer_from_logits(logits)
    else:
        if path in ("sort", "sort_0_8_0"):
            logits = _sort_top_k_top_p(logits, meta, cumsum_in_place=path == "sort")
        else:  # triton
            logits = _triton_top_k_top_p(logits, sm_count)
        sampled = _random_sample(logits.softmax(dim=-1, dtype=F32))
    return torch.where(meta["temperature"] < 1e-5, greedy, sampled)


def plain_run(path: str, rows: int, vocab: int, sm_count: int) -> list[Any]:
    """The plain dummy sampler run: bf16 logits held by `_dummy_sampler_run` throughout."""
    logits = torch.randn(rows, vocab, dtype=BF16, device=_dev())
    meta = _metadata(rows, vocab)
    if path == "flashinfer_then_native":
        first = _sampler(logits, meta, "flashinfer_logits", sm_count)
        native = "triton" if rows >= 8 else "sort"
        return [logits, first, _sampler(logits, meta, native, sm_count)]
    if path == "v2_fp32_copy":
        copy = torch.empty_like(logits, dtype=F32).copy_(logits)
        return [logits, copy.argmax(dim=-1)]
    if path == "v2_in_place":
        return [logits, logits.argmax(dim=-1)]
    return [logits, _sampler(logits, meta, path, sm_count)]


def _rejection(logits: torch.Tensor, meta: dict[str, torch.Tensor], variant: str, sm_count: int) -> list[Any]:
    """`RejectionSampler.forward` on [2 * rows, vocab] logits: bonus rows sampled, target rows filtered."""
    rows = logits.shape[0] // 2
    bonus = logits[torch.arange(rows, device=_dev()) * 2 + 1]
    raw = bonus.clone() if variant == "spec_two_rows_bf16_clone" else bonus.to(F32)  # logprobs "raw_logits"
    path = "triton" if variant == "spec_two_rows_triton" else "sort"
    bonus_out = _sampler(bonus, meta, path, sm_count)
    raw_target = logits[torch.arange(rows, device=_dev()) * 2].to(F32)  # kept for the logprobs
    target = raw_target if variant == "spec_two_rows_bf16_clone" else raw_target.clone()
    target.div_(meta["temperature"].unsqueeze(1))
    if path == "triton":
        target = _triton_top_k_top_p(target, sm_count)
    else:
        target = _sort_top_k_top_p(target, meta, cumsum_in_place=True)
    target_probs = target.softmax(dim=-1, dtype=F32)
    recovered = torch.empty((rows, logits.shape[1]), dtype=F32, device=_dev())
    recovered.exponential_()
    return [raw, bonus_out, raw_target, target_probs, recovered.argmax(dim=-1)]


def speculative_run(variant: str, rows: int, vocab: int, sm_count: int) -> list[Any]:
    """The plain run of the release, then its speculative branch with one draft token per request."""
    main_path = {
        "spec_bf16_target_softmax": "flashinfer_probs",
        "spec_bf16_target_sorted": "flashinfer_logits",
        "spec_two_rows_bf16_clone": "sort",
        "spec_two_rows_fp32_clone": "sort",
        "spec_two_rows_triton": "triton",
    }[variant]
    held = plain_run(main_path, rows, vocab, sm_count)
    meta = _metadata(rows, vocab)
    if variant in ("spec_bf16_target_softmax", "spec_bf16_target_sorted"):
        # 0.8.1-0.11.0: target logits [rows, vocab] in model dtype beside the plain run's logits.
        target = torch.randn(rows, vocab, dtype=BF16, device=_dev())
        target.div_(meta["temperature"].unsqueeze(-1).to(BF16))
        if variant == "spec_bf16_target_sorted":
            target = _sort_top_k_top_p(target, meta, cumsum_in_place=True)
        probs = target.softmax(dim=-1, dtype=F32)  # 0.8.x: one fused kernel (compiled_softmax)
        noise = torch.empty((rows, vocab), dtype=F32, device=_dev())
        noise.exponential_()
        return [*held, target, probs, noise]
    held[0] = torch.randn(2 * rows, vocab, dtype=BF16, device=_dev())  # replaces the plain logits
    return [*held, *_rejection(held[0], meta, variant, sm_count)]


def measure(case: str, run: Callable[[], list[Any]], rows: int, vocab: int) -> dict[str, Any]:
    """Peak allocated bytes above the start, and what stays allocated once the run's tensors are freed."""
    torch.cuda.synchronize()
    _TRITON_BUFFER.clear()
    torch.cuda.empty_cache()
    start = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    held = run()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - start
    del held
    torch.cuda.synchronize()
    kept = torch.cuda.memory_allocated() - start
    logits = rows * vocab
    row = {
        "case": case,
        "rows": rows,
        "vocab": vocab,
        "peak_bytes": peak,
        "kept_bytes": kept,
        "transient_bytes_per_logit": round((peak - kept) / logits, 3),
    }
    print(json.dumps(row), flush=True)
    return row


PLAIN = ("flashinfer_probs", "flashinfer_logits", "sort", "sort_0_8_0", "triton", "flashinfer_then_native")
V2 = ("v2_fp32_copy", "v2_in_place")
SPECULATIVE = (
    "spec_bf16_target_softmax",
    "spec_bf16_target_sorted",
    "spec_two_rows_bf16_clone",
    "spec_two_rows_fp32_clone",
    "spec_two_rows_triton",
)


def cases(sm_count: int) -> list[tuple[str, int, int, Callable[[], list[Any]]]]:
    """Every path at the rows colo's servers profile with (256 and 1024), a row sweep of the sort path, and
    the speculative branches at the field report's 256 rows x Qwen3.6 vocabulary."""
    out: list[tuple[str, int, int, Callable[[], list[Any]]]] = []

    def add(name: str, rows: int, vocab: int, fn: Callable[[str, int, int, int], list[Any]]) -> None:
        out.append((name, rows, vocab, lambda: fn(name, rows, vocab, sm_count)))

    for rows, vocab in ((256, QWEN_VOCAB), (1024, QWEN_VOCAB), (256, QWEN36_VOCAB), (1024, LLAMA3_VOCAB)):
        for name in (*PLAIN, *V2):
            add(name, rows, vocab, plain_run)
    for rows in (1, 2, 4, 8, 16, 32, 64, 96, 127, 128, 192, 384, 512):
        add("sort", rows, QWEN_VOCAB, plain_run)
    for rows, vocab in ((256, QWEN36_VOCAB), (128, QWEN36_VOCAB), (256, QWEN_VOCAB)):
        for name in SPECULATIVE:
            add(name, rows, vocab, speculative_run)
    return out


def _environment() -> dict[str, Any]:
    props = torch.cuda.get_device_properties(0)
    return {
        "gpu": torch.cuda.get_device_name(0),
        "sm_count": props.multi_processor_count,
        "total_memory_bytes": props.total_memory,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="sampler-peak.json")
    args = parser.parse_args()
    environment = _environment()
    rows = [measure(name, run, r, v) for name, r, v, run in cases(int(environment["sm_count"]))]
    with open(args.out, "w") as handle:
        json.dump({"environment": environment, "cases": rows}, handle, indent=1)


if __name__ == "__main__":
    main()
