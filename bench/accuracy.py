"""Budget accuracy against real vLLM startup logs (bench/data/vllm_startup_logs.yaml, each entry cited).

For every log that names its model, GPU, utilization and max_model_len, colo sizes the same process and
compares two figures vLLM prints: "Model loading took X GiB" (weights) and "Available KV cache memory: Y GiB".
A rule-of-thumb baseline is printed beside it: weights = parameters x bytes per parameter, and
KV = util x total - weights (what hand-made setups, like the field report's, assume).

Run: python bench/accuracy.py [--verbose]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from colo.catalog import GIB, GpuSpec, gpu  # noqa: E402
from colo.catalog.architecture import ModelArchitecture  # noqa: E402
from colo.catalog.models import catalog_architecture  # noqa: E402
from colo.catalog.vllm_rules import rules_for  # noqa: E402
from colo.plan.budget import ProcessSpec, size_process  # noqa: E402
from colo.plan.engine_limits import resolve_limits  # noqa: E402
from colo.plan.weights import parameter_parts  # noqa: E402

DATA = ROOT / "bench" / "data" / "vllm_startup_logs.yaml"

# Fine-tunes and quantized repacks that keep a catalog model's geometry (the log entry's notes say so).
SAME_GEOMETRY = {
    "NousResearch/Hermes-3-Llama-3.1-8B": ("meta-llama/Llama-3.1-8B-Instruct", None),
    "Qwen/Qwen2.5-7B-Instruct-AWQ": ("Qwen/Qwen2.5-7B-Instruct", "awq"),
}
GPU_NAMES = {
    "H100": "H100",
    "A100 40GB": "A100-40GB",
    "A100-SXM4-40GB": "A100-40GB",
    "RTX 3090": "RTX-3090",
    "L40S": "L40S",
    "H200": "H200",
}
# Logs that print no version: the release their source points to (see each entry's notes).
ASSUMED_VERSION = {"llmd_": "0.11.0", "friday_": "0.11.0"}
# Entries whose figures informed a constant in colo/catalog/vllm_rules.yaml; reported, but flagged.
INFORMED_CONSTANTS = {"llmd_h100_llama31_8b_16k", "llmd_h100_qwen3_0p6b_16k"}
# Entries the collector flagged as internally inconsistent.
UNRELIABLE = {"llmd_h100_gpt_oss_120b_16k"}


@dataclass
class Row:
    entry_id: str
    model: str
    gpu: str
    version: str
    weights_log: float
    weights_colo: float
    weights_rule: float
    kv_log: float
    kv_colo: float
    kv_rule: float
    flagged: bool


def _architecture(model: str) -> ModelArchitecture | None:
    base, quantization = SAME_GEOMETRY.get(model, (model, None))
    try:
        arch = catalog_architecture(base)
    except KeyError:
        return None
    return arch.with_quantization(quantization) if quantization else arch


def _gpu(entry: dict[str, Any]) -> GpuSpec | None:
    name = str(entry.get("gpu") or "")
    match = next((catalog for key, catalog in GPU_NAMES.items() if key in name), None)
    if match is None:
        return None
    spec = gpu(match)
    if entry.get("gpu_total_gib"):
        spec = replace(spec, cuda_total_bytes=round(float(entry["gpu_total_gib"]) * GIB))
    return spec


def _version(entry: dict[str, Any]) -> str | None:
    if entry.get("vllm_version"):
        return str(entry["vllm_version"]).split("+")[0]
    return next((v for prefix, v in ASSUMED_VERSION.items() if entry["id"].startswith(prefix)), None)


def _rule_of_thumb_weights(arch: ModelArchitecture) -> float:
    per_param = {"none": arch.dtype_bytes, "fp8": 1.0, "awq": 0.5, "gptq": 0.5, "nvfp4": 0.5}
    params = parameter_parts(arch, pooling=False, load_mtp=False).total
    return params * per_param.get(arch.quantization, 2) / GIB


def evaluate(entry: dict[str, Any]) -> Row | str:
    if entry.get("engine") != "V1":
        return "V0 engine: colo mirrors the V1 engine only"
    if entry.get("model_loading_gib") is None or entry.get("available_kv_cache_gib") is None:
        return "log lacks the weights or the KV figure"
    arch = _architecture(str(entry.get("model")))
    gpu_spec = _gpu(entry)
    version = _version(entry)
    util = entry.get("gpu_memory_utilization")
    if arch is None:
        return f"model {entry.get('model')} not in the catalog"
    if gpu_spec is None:
        return f"GPU '{entry.get('gpu')}' not in the catalog (or unified memory)"
    if version is None or util is None or entry.get("max_model_len") is None:
        return "version, utilization or max_model_len unknown"
    try:
        rules = rules_for(version)
    except ValueError as exc:
        return str(exc)
    limits = resolve_limits(
        arch,
        gpu_spec,
        rules,
        max_model_len=int(entry["max_model_len"]),
        max_num_seqs=entry.get("max_num_seqs"),
        max_num_batched_tokens=entry.get("max_num_batched_tokens"),
    )
    spec = ProcessSpec(
        arch=arch,
        gpu=gpu_spec,
        rules=rules,
        vllm_version=version,
        limits=limits,
        kv_cache_dtype=str(entry.get("kv_cache_dtype") or "auto"),
        enforce_eager=bool(entry.get("enforce_eager")),
        gpu_memory_utilization=float(util),
        tensor_parallel_size=int(entry.get("tensor_parallel_size") or 1),
    )
    budget = size_process(spec)
    tp = spec.tensor_parallel_size
    weights_rule = _rule_of_thumb_weights(arch) / tp
    return Row(
        entry_id=entry["id"],
        model=arch.model_id,
        gpu=gpu_spec.name,
        version=version,
        weights_log=float(entry["model_loading_gib"]),
        weights_colo=budget.weights_bytes / GIB,
        weights_rule=weights_rule,
        kv_log=float(entry["available_kv_cache_gib"]),
        kv_colo=budget.kv_bytes / GIB,
        kv_rule=float(util) * gpu_spec.cuda_total_bytes / GIB - weights_rule,
        flagged=entry["id"] in INFORMED_CONSTANTS,
    )


def _error(predicted: float, logged: float) -> float:
    return abs(predicted - logged) / abs(logged) if logged else float("inf")


def summarize(rows: list[Row]) -> dict[str, tuple[float, float]]:
    def stats(values: list[float]) -> tuple[float, float]:
        return (statistics.median(values), max(values)) if values else (float("nan"), float("nan"))

    positive = [r for r in rows if r.kv_log > 0]
    return {
        "weights colo": stats([_error(r.weights_colo, r.weights_log) for r in rows]),
        "weights rule of thumb": stats([_error(r.weights_rule, r.weights_log) for r in rows]),
        "KV colo": stats([_error(r.kv_colo, r.kv_log) for r in positive]),
        "KV rule of thumb": stats([_error(r.kv_rule, r.kv_log) for r in positive]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--verbose", action="store_true", help="also list the entries that were skipped")
    parser.add_argument(
        "--exclude-informing", action="store_true", help="leave out logs that informed constants"
    )
    args = parser.parse_args()
    entries = yaml.safe_load(DATA.read_text())["entries"]
    rows: list[Row] = []
    skipped: list[tuple[str, str]] = []
    for entry in entries:
        if entry["id"] in UNRELIABLE:
            skipped.append((entry["id"], "flagged inconsistent by its collector"))
            continue
        result = evaluate(entry)
        if isinstance(result, Row):
            if not (args.exclude_informing and result.flagged):
                rows.append(result)
        else:
            skipped.append((entry["id"], result))
    header = f"{'entry':44} {'vLLM':7} {'W log':>6} {'W colo':>7} {'W rule':>7} {'KV log':>7} {'KV colo':>8} {'KV rule':>8}"
    print(header)
    for r in rows:
        mark = " *" if r.flagged else ""
        print(
            f"{r.entry_id:44} {r.version:7} {r.weights_log:6.2f} {r.weights_colo:7.2f} {r.weights_rule:7.2f} "
            f"{r.kv_log:7.2f} {r.kv_colo:8.2f} {r.kv_rule:8.2f}{mark}"
        )
    print(f"\n{len(rows)} logs compared, {len(skipped)} skipped; * = informed a constant in vllm_rules.yaml")
    for label, (median, worst) in summarize(rows).items():
        print(f"{label:24} median error {median:6.1%}   worst {worst:6.1%}")
    if args.verbose:
        print("\nskipped:")
        for entry_id, reason in skipped:
            print(f"  {entry_id}: {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
