"""Budget accuracy against public vLLM startup logs (bench/data/vllm_startup_logs.yaml, each entry cited).

Each usable log is sized through the path `colo estimate` takes (colo.vllm.estimator), with the arguments the
log states, and compared in four groups, each beside the naive rule of thumb:

  weights      "Model loading took X GiB"             colo's weights        naive: params x bytes / TP
  KV | pool    "GPU KV cache size" tokens and          colo sized with the   naive: pool / (2 x layers x
               "Maximum concurrency"                   log's KV pool         kv heads x head dim x bytes)
  KV | util    "Available KV cache memory" and tokens  the full chain from   naive: util x total - params
                                                       the utilization       x bytes - 0.5 GiB
  startup      the verdict (started or the error) and  colo's verdict and    naive: fails when its KV
               the requested GiB                       util x total          cannot hold one request

Logs whose figures informed a constant of colo's catalogs (every `informed_by` list in the YAML files of colo/catalog and colo/vllm)
are reported apart and never counted in the headline figures. Logs colo cannot size are listed with why.

Models outside colo's catalog are read the way `colo estimate --model org/name` reads them: through
huggingface_hub, here from a local Hub on loopback serving the cited public files of tests/hub_files (the bench
reaches no network). The third-party campaign of tests/hub_files/LOGS.yaml (vLLM 0.19.0, one H100 node) is
reported on its own: no constant of colo was set from it.

Run: python bench/accuracy.py [--verbose]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from colo.catalog import GIB, GpuLookupError, gpu
from colo.catalog.data import parse_yaml
from colo.config.estimate import EstimateArguments
from colo.vllm import (
    KV_DTYPE_BYTES,
    Estimate,
    EstimateRefused,
    ModelArchitecture,
    ProcessBudget,
    estimate,
    parameter_parts,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "vllm_startup_logs.yaml"
CAMPAIGN = ROOT / "tests" / "hub_files" / "LOGS.yaml"
# Every data file whose figures may cite the logs that informed them: the catalogs and the vLLM rules.
INFORMING_YAML = (ROOT / "colo" / "catalog", ROOT / "colo" / "vllm")

# Fine-tunes that keep a catalog model's geometry and dtype (the log entry's notes say so). A quantized
# repack is a different checkpoint and is not mapped: its model entry has to say how it is quantized.
SAME_GEOMETRY = {"NousResearch/Hermes-3-Llama-3.1-8B": "meta-llama/Llama-3.1-8B-Instruct"}
# Logs that print no version: the release their source points to.
#   llmd_: the llm-d-benchmark page ran `vllm/vllm-openai:latest` (its deployment section) and was committed on
#     2026-01-27 (rows for Qwen3-32B on 2026-02-26); the newest release on PyPI then was 0.14.1 (uploaded
#     2026-01-24; 0.15.x published no source distribution and follows the same rules in colo).
#   friday_: its excerpt prints "[kv_cache_utils.py:1229] GPU KV cache size" and "Model loading took ... GiB
#     memory"; that line number holds that logger call only in vllm 0.11.1 and 0.11.2.
ASSUMED_VERSION = {"llmd_": "0.14.1", "friday_": "0.11.2"}
# Logs of a GPU named by its memory alone ("80 GB-class", 79.18-79.19 GiB printed) that failed vLLM's startup
# check: colo needs a compute capability to plan, and the verdict (utilization x total against the free memory
# the log prints) is the same for any; 8.0 is the lowest of the catalog GPUs of that total (A100 80GB).
STARTUP_CHECK_CAPABILITY = {
    "c_fail_free_mem_qwen35_122b_a10b_tp4_v0230": "8.0",
    "c_fail_free_mem_qwen3_embedding_4b_80g_v0110": "8.0",
}
KV_DTYPES = {"auto": "auto", "bf16": "auto", "bfloat16": "auto", "fp16": "auto", "float16": "auto"}
TOLERANCE = {"weights": 0.03, "kv_pool": 0.02, "kv_util": 0.05, "requested": 0.01}
NAIVE_OVERHEAD_GIB = 0.5
# The naive rule's bytes per parameter by quantization method.
NAIVE_BYTES = {"fp8": 1.0, "compressed-tensors": 1.0, "awq": 0.5, "gptq": 0.5, "nvfp4": 0.5, "mxfp4": 0.5}


class Skip(Exception):
    """colo cannot size this log; the message says why."""


@dataclass(frozen=True)
class Comparison:
    """One figure a log prints, what colo predicts and what the naive rule predicts."""

    entry_id: str
    figure: str
    logged: float
    colo: float
    naive: float

    def error(self, predicted: float) -> float:
        return abs(predicted - self.logged) / abs(self.logged) if self.logged else float("inf")


@dataclass(frozen=True)
class Verdict:
    entry_id: str
    started: bool
    colo_started: bool
    naive_started: bool
    colo_error: str


@dataclass(frozen=True)
class Facts:
    """What a sized log exercises, as colo resolved it (for the coverage summary)."""

    tensor_parallel_size: int
    quantization: str
    release: str
    gpu: str
    kv_cache_dtype: str


@dataclass
class Results:
    comparisons: dict[str, list[Comparison]] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    facts: dict[str, Facts] = field(default_factory=dict)

    def add(self, group: str, comparison: Comparison) -> None:
        self.comparisons.setdefault(group, []).append(comparison)


# --- the log's arguments, as `colo estimate` takes them ------------------------------------------------


def informed_ids(roots: tuple[Path, ...] = INFORMING_YAML) -> set[str]:
    """Every log id listed under an `informed_by` key anywhere in the catalogs' and rules' YAML files."""

    def walk(node: Any) -> Iterable[str]:
        if isinstance(node, Mapping):
            yield from (str(i) for i in node.get("informed_by") or ())
            for key, value in node.items():
                if key != "informed_by":
                    yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)

    paths = sorted(path for root in roots for path in root.rglob("*.yaml"))
    return {i for path in paths for i in walk(parse_yaml(path.read_text()))}


def _release(entry: Mapping[str, Any]) -> str:
    text = str(entry.get("vllm_version") or "")
    match = re.match(r"^(\d+\.\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)(?![\w.+])", text)
    if match:
        return match.group(1)
    assumed = next((v for prefix, v in ASSUMED_VERSION.items() if str(entry["id"]).startswith(prefix)), None)
    if assumed:
        return assumed
    raise Skip(f"vLLM version '{text or 'not printed'}' is not a release")


def _gpu(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The GPU as a user would name it, with the CUDA total the log prints where it prints one (the
    device's own figure beats the catalog's, which another driver may report differently); by that total
    alone when the name finds no single catalog GPU."""
    stated = str(entry.get("gpu") or "")
    # "NVIDIA A100 80GB x4 (four pods ...)": the name is what precedes the remark and the GPU count.
    bare = re.sub(r"\s+x\d+$", "", re.split(r"[(;]", stated)[0].strip())
    sizes = [f"{bare} {size}GB" for size in re.findall(r"(\d+)\s*GB", stated)]  # "(80GB variant)"
    printed = entry.get("gpu_total_gib")
    memory = {"gpu_memory_mib": round(float(printed) * 1024)} if printed else {}
    for name in (stated, bare, *sizes):
        try:
            return {"gpu": gpu(name).name, **memory}
        except GpuLookupError as exc:
            reason = str(exc.args[0])
    if memory:
        capability = entry.get("gpu_compute_capability") or STARTUP_CHECK_CAPABILITY.get(str(entry["id"]))
        if capability is None:
            raise Skip(
                f"GPU {stated or 'not named'}: not in colo's catalog and its compute capability not stated"
            )
        return {**memory, "gpu_compute_capability": str(capability)}
    raise Skip(f"GPU: {reason}" if stated else "GPU not named and its total not printed")


def _speculative(entry: Mapping[str, Any]) -> dict[str, Any]:
    spec = entry.get("speculative_config")
    if not spec:
        return {}
    text = str(spec)
    method = re.search(r"'method': '(\w+)'", text)
    tokens = re.search(r"'num_speculative_tokens': (\d+)", text)
    if method is None:
        raise Skip(f"speculative config not one colo reads: {text[:60]}")
    return {
        "speculative_method": method.group(1),
        "num_speculative_tokens": int(tokens.group(1)) if tokens else None,
    }


def _kv_dtype(entry: Mapping[str, Any]) -> str:
    raw = str(entry.get("kv_cache_dtype") or "auto").split(" ")[0]
    if raw in KV_DTYPES:
        return KV_DTYPES[raw]
    if raw in KV_DTYPE_BYTES:  # the 8-bit dtypes colo sizes, scales included
        return raw
    raise Skip(f"KV cache dtype {raw} is not modelled")


DTYPE_NAMES = ("auto", "half", "float16", "bfloat16", "float", "float32")


def _dtype_flag(entry: Mapping[str, Any]) -> str | None:
    """`--dtype` where the log states it: its own argument print (`'dtype': 'half'`), else the entry's `dtype`
    when it is one of vLLM's names (the dtype the run passed or, in bench/data, the one its engine line shows:
    the same memory either way). None: vLLM's auto, resolved by colo as the release does."""
    for line in entry.get("excerpt") or ():
        text = str(line)
        if "non-default args" not in text and "Namespace(" not in text:
            continue
        match = re.search(r"""(?<![\w])['"]?dtype['"]?\s*[:=]\s*['"](\w+)['"]""", text)
        if match and match.group(1) in DTYPE_NAMES:
            return match.group(1)
    stated = str(entry.get("dtype") or "").split(" ")[0]
    return stated if stated in DTYPE_NAMES and stated != "auto" else None


def _quantization_flag(entry: Mapping[str, Any]) -> str | None:
    """`--quantization` where the log's own argument print shows it (`non-default args: {...}` or the 0.8
    `args: Namespace(...)` line): vLLM then takes that method instead of resolving the checkpoint's (online
    FP8 of an unquantized checkpoint, or `awq` kept off the Marlin kernel)."""
    for line in entry.get("excerpt") or ():
        text = str(line)
        if "non-default args" not in text and "Namespace(" not in text:
            continue
        match = re.search(r"""quantization['"]?\s*[:=]\s*['"]([\w-]+)['"]""", text)
        if match:
            return match.group(1)
    return None


def arguments(entry: Mapping[str, Any]) -> EstimateArguments:
    """The log's settings as EstimateArguments (validated exactly as the CLI's flags are)."""
    if entry.get("engine") != "V1":
        raise Skip("V0 engine: colo mirrors the V1 engine only")
    model = SAME_GEOMETRY.get(str(entry.get("model")), str(entry.get("model")))
    values: dict[str, Any] = {
        "model": model,
        "vllm_version": _release(entry),
        "gpu_memory_utilization": entry.get("gpu_memory_utilization"),
        "max_model_len": entry.get("max_model_len"),
        "max_num_seqs": entry.get("max_num_seqs"),
        "max_num_batched_tokens": entry.get("max_num_batched_tokens"),
        "kv_cache_dtype": _kv_dtype(entry),
        "quantization": _quantization_flag(entry),
        "enforce_eager": bool(entry.get("enforce_eager")),
        "tensor_parallel_size": int(entry.get("tensor_parallel_size") or 1),
        "pipeline_parallel_size": int(entry.get("pipeline_parallel_size") or 1),
        "dtype": _dtype_flag(entry),
        # Only where the log's source says how vLLM was installed: a pip install without FlashInfer.
        "without_flashinfer": entry.get("flashinfer_installed") is False,
        # Only where the log or its source says the ranks lack peer-to-peer access.
        "no_peer_to_peer": entry.get("peer_to_peer") is False,
        # Only where the log or its source puts the ranks on one NVSwitch board.
        "nvswitch": entry.get("nvswitch") is True,
        **_gpu(entry),
        **_speculative(entry),
    }
    try:
        return EstimateArguments.model_validate(values)
    except ValidationError as exc:
        raise Skip(
            "; ".join(f"{e['loc'][0] if e['loc'] else ''}: {e['msg']}" for e in exc.errors())
        ) from None


def _size(args: EstimateArguments, **kwargs: Any) -> Estimate:
    try:
        return estimate(args.request(), **kwargs)
    except EstimateRefused as exc:
        raise Skip(f"{exc.field}: {exc.message}") from None


# --- the naive rule ----------------------------------------------------------------------------------


def naive_weights_gib(arch: ModelArchitecture, tp: int) -> float:
    params = parameter_parts(arch, pooling=False, load_mtp=False).total
    return params * NAIVE_BYTES.get(arch.quantization, float(arch.dtype_bytes)) / tp / GIB


def naive_bytes_per_token(arch: ModelArchitecture, kv_cache_dtype: str) -> float:
    """Every layer a full-attention layer, every KV head on every rank: 2 x layers x kv heads x dim x bytes."""
    dtype_bytes = KV_DTYPE_BYTES.get(kv_cache_dtype, arch.dtype_bytes)
    return 2.0 * arch.num_layers * arch.num_kv_heads * arch.head_dim * dtype_bytes


def naive_kv_gib(result: Estimate) -> float:
    spec = result.budget.spec
    total_gib = result.gpu.cuda_total_bytes / GIB
    return (
        spec.utilization * total_gib
        - naive_weights_gib(result.arch, spec.tensor_parallel_size)
        - NAIVE_OVERHEAD_GIB
    )


# --- the four groups ---------------------------------------------------------------------------------


def _logged_stage(result: Estimate) -> ProcessBudget:
    """The rank whose "Model loading took" and "Available KV cache memory" a log shows: at pipeline parallel
    the first stage's (the only one that prints them from 0.11.1, and the first to print them before), not the
    binding stage whose blocks the engine keeps (docs/vllm-memory-rules.md §16)."""
    return result.stages[0] if result.stages else result.budget


def _weights(entry: Mapping[str, Any], result: Estimate, results: Results) -> None:
    if entry.get("model_loading_gib") is None:
        return
    tp = result.budget.spec.tensor_parallel_size
    results.add(
        "weights",
        Comparison(
            str(entry["id"]),
            "weights GiB",
            float(entry["model_loading_gib"]),
            _logged_stage(result).weights_bytes / GIB,
            naive_weights_gib(result.arch, tp),
        ),
    )


def _kv_given_pool(entry: Mapping[str, Any], args: EstimateArguments, results: Results) -> None:
    pool = entry.get("available_kv_cache_gib")
    if (
        pool is None
        or float(pool) <= 0
        or (entry.get("kv_cache_tokens") is None and entry.get("max_concurrency") is None)
    ):
        return
    result = _size(args, kv_pool_bytes=round(float(pool) * GIB))
    capacity = result.budget.capacity
    if capacity is None:
        return
    naive_tokens = float(pool) * GIB / naive_bytes_per_token(result.arch, args.kv_cache_dtype)
    max_len = result.budget.spec.limits.max_model_len
    if entry.get("kv_cache_tokens") is not None:
        logged = float(entry["kv_cache_tokens"])
        results.add(
            "kv_pool", Comparison(str(entry["id"]), "KV tokens", logged, capacity.tokens, naive_tokens)
        )
    if entry.get("max_concurrency") is not None:
        logged = float(entry["max_concurrency"])
        results.add(
            "kv_pool",
            Comparison(
                str(entry["id"]), "max concurrency", logged, capacity.max_concurrency, naive_tokens / max_len
            ),
        )


def _kv_from_util(entry: Mapping[str, Any], result: Estimate, results: Results) -> None:
    """The pool in GiB where the log prints it, and the token count wherever it does (some logs print only
    the `GPU KV cache size` line)."""
    pool = entry.get("available_kv_cache_gib")
    if entry.get("startup_error") and (pool is None or float(pool) <= 0):
        return
    naive = naive_kv_gib(result)
    if pool is not None:
        colo = _logged_stage(result).kv_bytes / GIB
        results.add("kv_util", Comparison(str(entry["id"]), "KV GiB", float(pool), colo, naive))
    capacity = result.budget.capacity
    if entry.get("kv_cache_tokens") is not None and capacity is not None:
        per_token = naive_bytes_per_token(result.arch, result.budget.spec.kv_cache_dtype)
        naive_tokens = max(naive, 0.0) * GIB / per_token
        logged = float(entry["kv_cache_tokens"])
        results.add(
            "kv_util", Comparison(str(entry["id"]), "KV tokens", logged, capacity.tokens, naive_tokens)
        )


# What a memory verdict's error says; anything else (a hang, a kernel error) is not one the budget decides.
MEMORY_ERRORS = (
    "free memory on device",
    "kv cache",
    "cache blocks",
    "max seq len",
    "out of memory",
    "outofmemory",
    "memory utilization",
)


def _started(entry: Mapping[str, Any]) -> bool | None:
    """True: the log shows a KV cache sized and no error; False: a memory failure at startup; None: neither
    (including failures of another kind, which say nothing about the budget)."""
    error = str(entry.get("startup_error") or "").lower()
    if error:
        return False if any(marker in error for marker in MEMORY_ERRORS) else None
    printed = ("available_kv_cache_gib", "kv_cache_tokens", "max_concurrency")
    return True if any(entry.get(key) is not None for key in printed) else None


def _startup(entry: Mapping[str, Any], args: EstimateArguments, result: Estimate, results: Results) -> None:
    started = _started(entry)
    if started is None:
        return
    if entry.get("free_at_startup_gib") is not None:
        # The log prints free memory after the process's own context; colo takes it before.
        free = float(entry["free_at_startup_gib"]) + result.budget.context_bytes / GIB
        result = _size(args.model_copy(update={"free_memory_gib": free}))
    budget = result.budget
    per_token = naive_bytes_per_token(result.arch, budget.spec.kv_cache_dtype)
    naive_started = naive_kv_gib(result) * GIB >= per_token * budget.spec.limits.max_model_len
    errors = [budget.startup.message, *budget.errors]
    results.verdicts.append(
        Verdict(str(entry["id"]), started, budget.ok, naive_started, next((e for e in errors if e), ""))
    )
    if entry.get("requested_gib") is not None:
        requested = budget.requested_bytes / GIB
        naive = budget.spec.utilization * result.gpu.cuda_total_bytes / GIB
        results.add(
            "requested",
            Comparison(str(entry["id"]), "requested GiB", float(entry["requested_gib"]), requested, naive),
        )


def evaluate(entry: Mapping[str, Any], results: Results) -> None:
    """Every comparison this log allows, added to `results`; Skip when colo cannot size it."""
    args = arguments(entry)
    result = _size(args)
    spec = result.budget.spec
    results.facts[str(entry["id"])] = Facts(
        tensor_parallel_size=spec.tensor_parallel_size,
        quantization=result.arch.quantization or "none",
        release=args.vllm_version,
        gpu=result.gpu.name if result.gpu.from_catalog else "given by its CUDA total",
        kv_cache_dtype=spec.kv_cache_dtype,
    )
    _weights(entry, result, results)
    _kv_given_pool(entry, args, results)
    _kv_from_util(entry, result, results)
    _startup(entry, args, result, results)


def run(entries: Iterable[Mapping[str, Any]]) -> Results:
    results = Results()
    for entry in entries:
        if not entry.get("usable"):
            results.skipped.append((str(entry["id"]), f"not usable: {entry.get('excluded_because')}"))
            continue
        try:
            evaluate(entry, results)
        except Skip as exc:
            results.skipped.append((str(entry["id"]), str(exc)))
    return results


# --- summaries -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    count: int
    within: int
    median: float
    worst: float


def summarize(
    comparisons: list[Comparison], tolerance: float, pick: Callable[[Comparison], float]
) -> Summary:
    errors = [c.error(pick(c)) for c in comparisons]
    if not errors:
        return Summary(0, 0, float("nan"), float("nan"))
    return Summary(len(errors), sum(e <= tolerance for e in errors), statistics.median(errors), max(errors))


def verdict_counts(verdicts: list[Verdict]) -> tuple[int, int, int, int]:
    """(logs, failures among them, colo right, naive right)."""
    return (
        len(verdicts),
        sum(not v.started for v in verdicts),
        sum(v.colo_started == v.started for v in verdicts),
        sum(v.naive_started == v.started for v in verdicts),
    )


def split(results: Results, informed: set[str]) -> tuple[Results, Results]:
    """The headline results, and those of logs that informed a constant (reported apart)."""
    headline, flagged = Results(skipped=results.skipped), Results()
    for entry_id, facts in results.facts.items():
        (flagged if entry_id in informed else headline).facts[entry_id] = facts
    for group, comparisons in results.comparisons.items():
        for c in comparisons:
            (flagged if c.entry_id in informed else headline).add(group, c)
    for v in results.verdicts:
        (flagged if v.entry_id in informed else headline).verdicts.append(v)
    return headline, flagged


GROUPS = [
    ("weights", "weights GiB", TOLERANCE["weights"]),
    ("kv_pool", "KV tokens / max concurrency, given the KV pool", TOLERANCE["kv_pool"]),
    ("kv_util", "KV GiB and tokens from utilization alone", TOLERANCE["kv_util"]),
    ("requested", "startup: requested GiB", TOLERANCE["requested"]),
]


def _cell(summary: Summary) -> str:
    if not summary.count:
        return "no log sized"
    return f"{summary.within}/{summary.count}, median {summary.median:.2%}, worst {summary.worst:.1%}"


def _line(label: str, tolerance: float, comparisons: list[Comparison]) -> str:
    colo = summarize(comparisons, tolerance, lambda c: c.colo)
    naive = summarize(comparisons, tolerance, lambda c: c.naive)
    return f"| {label} within {tolerance:.0%} | {_cell(colo)} | {_cell(naive)} |"


def table(results: Results) -> list[str]:
    lines = ["| group | colo | naive rule |", "|---|---|---|"]
    for group, label, tolerance in GROUPS:
        lines.append(_line(label, tolerance, results.comparisons.get(group, [])))
    logs, failures, colo_right, naive_right = verdict_counts(results.verdicts)
    lines.append(
        f"| startup verdicts ({failures} real failures) | {colo_right}/{logs} | {naive_right}/{logs} |"
    )
    return lines


def _tally(values: Iterable[object]) -> str:
    counts = Counter(str(v) for v in values)
    return ", ".join(f"{value} {n}" for value, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def coverage(results: Results) -> list[str]:
    """How many logs each group compares, and what the sized logs span."""
    lines = []
    for group, label, _ in GROUPS:
        ids = {c.entry_id for c in results.comparisons.get(group, [])}
        lines.append(f"  {label}: {len(ids)} logs")
    lines.append(f"  startup verdicts: {len(results.verdicts)} logs")
    facts = list(results.facts.values())
    lines.append(f"  logs sized: {len(facts)}")
    lines.append(f"  tensor-parallel sizes: {_tally(f.tensor_parallel_size for f in facts)}")
    lines.append(f"  quantized formats (as colo resolves them): {_tally(f.quantization for f in facts)}")
    lines.append(f"  KV cache dtypes: {_tally(f.kv_cache_dtype for f in facts)}")
    lines.append(f"  releases: {_tally(f.release for f in facts)}")
    lines.append(f"  GPUs: {_tally(f.gpu for f in facts)}")
    return lines


# Why a log is not sized, by its reason's words (the Skip messages above and EstimateRefused's, which start with
# the argument to blame): a marker the lower-cased reason starts with (^) or holds.
SKIP_KINDS = (
    ("^not usable:", "excluded by the dataset (the log lacks what sizing needs)"),
    ("^v0 engine", "a V0 engine"),
    ("is not a release", "a development build (no release's rules)"),
    ("is not in colo's model catalog", "a model outside the catalog with no public copy of its files"),
    ("^gpu", "a GPU name that fits several cards, or none, and no printed total"),
    ("^quantization:", "a --quantization name the release does not take"),
    ("^speculative config", "a speculative method colo does not read"),
    ("^max_model_len:", "a context vLLM itself refuses"),
)


def skip_kind(reason: str) -> str:
    """The kind of reason a log was not sized, as SKIP_KINDS names it ("other" for none of them)."""
    text = reason.lower()
    for marker, kind in SKIP_KINDS:
        if text.startswith(marker[1:]) if marker.startswith("^") else marker in text:
            return kind
    return "other"


def not_sized(results: Results) -> list[str]:
    """Every log not sized, counted by the kind of its reason (`--verbose` lists each one's own)."""
    kinds = Counter(skip_kind(reason) for _, reason in results.skipped)
    return [f"  {n:3} {kind}" for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))]


def _details(results: Results) -> list[str]:
    lines = []
    for group, comparisons in results.comparisons.items():
        for c in comparisons:
            lines.append(
                f"  {group:9} {c.entry_id:58} {c.figure:16} log {c.logged:>11.2f}  colo {c.colo:>11.2f} "
                f"({c.error(c.colo):6.1%})  naive {c.naive:>11.2f} ({c.error(c.naive):6.1%})"
            )
    for v in results.verdicts:
        mark = "ok  " if v.colo_started == v.started else "MISS"
        lines.append(
            f"  startup   {v.entry_id:58} {'started' if v.started else 'failed':8} colo {mark} naive "
            f"{'ok' if v.naive_started == v.started else 'MISS'} {v.colo_error[:70]}"
        )
    return lines


@contextmanager
def local_hub() -> Iterator[None]:
    """HF_ENDPOINT at a loopback Hub serving tests/hub_files, with a throwaway HF_HOME, for the run only."""
    if (
        str(ROOT) not in sys.path
    ):  # run as a script: the tests' local Hub is in the repository's tests package
        sys.path.insert(0, str(ROOT))
    from tests.hub.fixtures import ACCESS_TOKEN, public_repos
    from tests.hub.server import LocalHub

    saved = {key: os.environ.get(key) for key in ("HF_ENDPOINT", "HF_HOME", "HF_TOKEN", "HF_HUB_OFFLINE")}
    with (
        tempfile.TemporaryDirectory() as home,
        LocalHub(public_repos(), {ACCESS_TOKEN}, {ACCESS_TOKEN}) as hub,
    ):
        os.environ.update(HF_ENDPOINT=hub.endpoint, HF_HOME=home, HF_TOKEN=ACCESS_TOKEN)
        os.environ.pop("HF_HUB_OFFLINE", None)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def campaign_entries() -> list[Mapping[str, Any]]:
    """The campaign ran on one node of more than four H100 SXM GPUs (it tried TP5): an 8-GPU HGX board, whose
    GPUs meet through NVSwitch."""
    data = parse_yaml(CAMPAIGN.read_text())
    return [{**entry, "nvswitch": True} for entry in [*data["entries"], *data["catalog_model_entries"]]]


def report(title: str, entries: list[Mapping[str, Any]], informed: set[str], verbose: bool) -> None:
    headline, flagged = split(run(entries), informed)
    usable = sum(1 for e in entries if e.get("usable"))
    sized = len(headline.facts) + len(flagged.facts)
    print(f"\n== {title}")
    print(
        f"{len(entries)} logs, {usable} usable; {sized} sized ({len(flagged.facts)} of them informed a constant), "
        f"{usable - sized} usable ones not sized"
    )
    print("\nCounts are figures compared (a log may print both a GiB and a token figure).")
    print("\nHeadline (logs that informed no constant):")
    print("\n".join(table(headline)))
    if flagged.facts:
        print(
            f"\nLogs that informed a constant ({', '.join(sorted(informed & set(flagged.facts)))}), reported apart:"
        )
        print("\n".join(table(flagged)))
    if verbose:
        print("\nEvery comparison (headline, then informed):")
        print("\n".join(_details(headline) + _details(flagged)))
        print("\nNot sized:")
        print("\n".join(f"  {entry_id}: {reason}" for entry_id, reason in headline.skipped))
    print(f"\nNot sized ({len(headline.skipped)} logs; --verbose gives each one's reason):")
    print("\n".join(not_sized(headline)))
    print("\nCoverage of the headline logs:")
    print("\n".join(coverage(headline)))
    if flagged.facts:
        print("Coverage of the logs that informed a constant:")
        print("\n".join(coverage(flagged)))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--verbose", action="store_true", help="also print every comparison and every skip")
    args = parser.parse_args()
    informed = informed_ids()
    with local_hub():
        report(
            "public startup logs (bench/data/vllm_startup_logs.yaml)",
            parse_yaml(DATA.read_text())["entries"],
            informed,
            args.verbose,
        )
        report(
            "a third-party campaign: vLLM 0.19.0 on one H100 node (tests/hub_files/LOGS.yaml)",
            campaign_entries(),
            informed,
            args.verbose,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
