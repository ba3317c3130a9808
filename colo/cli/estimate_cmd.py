"""`colo estimate`: one vLLM process (one GPU rank), sized as vLLM would size it.

Each flag's accepted values come from the stack schema (colo.config.estimate): a bad value exits 2 naming the
flag, before anything is sized. A new flag is one argument here, one field of EstimateArguments (named like
the flag, typed like its stack key) and its use in colo.vllm.estimator; a test holds every flag to that.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pydantic import ValidationError

from colo.catalog import gpu_names
from colo.cli.common import ExitCode, schema_choices
from colo.config.estimate import EstimateArguments, Runner
from colo.config.schema import (
    KV_CACHE_DTYPE_CHOICES,
    QUANTIZATION_CHOICES,
    ModelDtype,
    SpeculativeMethod,
)
from colo.errors import ArgumentsError, Problem
from colo.vllm import EstimateRefused, estimate, estimate_view, supported_range


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        required=True,
        help="a config.json or model directory, else a Hugging Face id: colo's catalog, then the Hub (HF_ENDPOINT, "
        "HF_TOKEN, HF_HUB_OFFLINE and HF_HOME as huggingface_hub reads them)",
    )
    parser.add_argument("--revision", help="the Hub revision (branch, tag or commit) a Hub id is read at")
    parser.add_argument(
        "--gpu",
        help=f"the GPU as nvidia-smi names it or its short form ({', '.join(gpu_names())}); for another GPU "
        "give --gpu-memory-mib and --gpu-compute-capability",
    )
    parser.add_argument(
        "--gpu-memory-mib",
        type=int,
        help="the GPU's total memory as CUDA reports it, in MiB: torch.cuda.mem_get_info()[1] // 2**20, i.e. "
        "the device total vLLM prints ('Free memory on device (F/T GiB)': T x 1024), not nvidia-smi's larger "
        "memory.total. With --gpu-compute-capability: a GPU colo's catalog lacks (its CUDA context is taken as "
        "the largest in the catalog); with a catalog --gpu: replaces its total",
    )
    parser.add_argument(
        "--gpu-compute-capability",
        help="the GPU's CUDA compute capability as `nvidia-smi --query-gpu=compute_cap --format=csv` prints it "
        "(8.0, 8.9, 12.0): required with --gpu-memory-mib for a GPU colo's catalog lacks",
    )
    parser.add_argument("--vllm-version", default=supported_range()[1], help="default: the newest mirrored")
    parser.add_argument(
        "--assume-rules-of",
        metavar="RELEASE",
        help="at your own risk: size a --vllm-version newer than every mirrored release with the rules of this "
        "mirrored one; the output says so under rules_assumed",
    )
    parser.add_argument("--gpu-memory-utilization", type=float, help="a fraction in (0, 1]")
    parser.add_argument("--max-model-len", type=int)
    parser.add_argument("--max-num-seqs", type=int)
    parser.add_argument("--max-num-batched-tokens", type=int)
    parser.add_argument("--kv-cache-dtype", default="auto", choices=KV_CACHE_DTYPE_CHOICES)
    parser.add_argument(
        "--quantization",
        choices=QUANTIZATION_CHOICES,
        help="vLLM's own method names; default: what the checkpoint's config declares, as vLLM resolves it",
    )
    parser.add_argument("--enforce-eager", action="store_true")
    parser.add_argument("--runner", choices=schema_choices(Runner), default="generate")
    parser.add_argument("--tensor-parallel-size", type=int, default=1)
    parser.add_argument(
        "--pipeline-parallel-size",
        type=int,
        default=1,
        help="stages as vLLM splits the layers (get_pp_indices); the figures are the binding stage's, every "
        "stage is listed under pipeline",
    )
    parser.add_argument(
        "--dtype",
        choices=schema_choices(ModelDtype),
        help="vLLM's --dtype; default: auto, as the release resolves it for the checkpoint and the GPU",
    )
    parser.add_argument("--kv-cache-memory-bytes", type=int)
    parser.add_argument("--free-memory-gib", type=float, help="free memory at start instead of an idle GPU")
    parser.add_argument("--num-speculative-tokens", type=int)
    parser.add_argument("--speculative-method", choices=schema_choices(SpeculativeMethod))
    parser.add_argument(
        "--allow-long-max-model-len", action="store_true", help="VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
    )
    parser.add_argument("--language-model-only", action="store_true", help="no vision tower (vLLM >= 0.17)")
    parser.add_argument("--limit-mm-per-prompt", type=json.loads, help='items by modality: {"image": 0}')
    parser.add_argument(
        "--skip-mm-profiling", action="store_true", help="tower built, not profiled (0.10.1+)"
    )
    parser.add_argument(
        "--trust-remote-code", action="store_true", help="let vLLM run the repository's own code (auto_map)"
    )
    parser.add_argument(
        "--without-flashinfer",
        action="store_true",
        help="vLLM installed without FlashInfer (a plain pip install of a release that does not require it); "
        "its dummy sampler run then takes PyTorch's path. Default: FlashInfer present, as in vLLM's images",
    )
    parser.add_argument(
        "--no-peer-to-peer",
        action="store_true",
        help="tensor-parallel ranks without peer-to-peer access (vLLM logs 'Custom allreduce is disabled "
        "because your platform lacks GPU P2P capability'): NCCL stages through host memory",
    )
    parser.add_argument(
        "--nvswitch",
        action="store_true",
        help="the tensor-parallel ranks share one NVSwitch board (8-GPU HGX: p4d, p4de, p5, p5e, p5en), where NCCL "
        "adds NVLink SHARP buffers from three ranks (read in NCCL's source, not measured)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON (the default output is JSON too)")


def flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def _problem(error: Any) -> Problem:
    field = str(error["loc"][0]) if error["loc"] else "model"
    return Problem(flag(field), str(error["msg"]).removeprefix("Value error, "))


def parse_arguments(args: argparse.Namespace) -> EstimateArguments:
    """The flags as EstimateArguments; every invalid one is named in one ArgumentsError."""
    values = {name: getattr(args, name) for name in EstimateArguments.model_fields if hasattr(args, name)}
    try:
        return EstimateArguments.model_validate(values)
    except ValidationError as exc:
        raise ArgumentsError([_problem(error) for error in exc.errors()]) from None


def run(args: argparse.Namespace) -> int:
    arguments = parse_arguments(args)
    try:
        result = estimate(arguments.request())
    except EstimateRefused as exc:
        raise ArgumentsError([Problem(flag(exc.field), exc.message)]) from None
    print(json.dumps(estimate_view(result), indent=2))
    return ExitCode.OK if result.ok else ExitCode.FAILS
