"""How vLLM sizes itself at startup, release by release: its rules, its reading of a checkpoint, and the memory of
one process and of several processes on one GPU. Knows nothing of stacks, Kubernetes or AWS.

This module is the package's public surface: the rest of colo, and any other program, imports from `colo.vllm`
alone. `estimate` sizes one process (one rank) as vLLM would; `plan_gpu` sizes several started one after another on
one GPU; `plan_group` a tensor-parallel LLM's ranks on the GPUs of its group, beside companions spread over them. The
submodules are internal and may change without notice.
"""

from __future__ import annotations

from colo.vllm.assumed_rules import assumed_rules_warning, assumption_refusal
from colo.vllm.calibration import (
    CALIBRATED_FIGURES,
    AppliedCalibration,
    Calibration,
    CalibrationEntry,
    Observation,
)
from colo.vllm.checkpoint.architecture import ArchitectureError, ModelArchitecture
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.checkpoint.files import (
    MAX_CONFIG_BYTES,
    architecture_from_mapping,
    architecture_from_path,
    parse_config_json,
)
from colo.vllm.checkpoint.hub import HubError, HubModel
from colo.vllm.checkpoint.named import named_model
from colo.vllm.checkpoint.quant_methods import (
    QuantizationRefused,
    all_kv_cache_dtypes,
    all_quantization_names,
    check_quantization_name,
    quant_release,
    resolve_architecture,
)
from colo.vllm.checkpoint.safetensors import header_length, parse_header, tensor_bytes_by_part
from colo.vllm.colocate import GpuPlan, ServerPlan, ServerRequest, plan_gpu
from colo.vllm.colocate_tp import GroupPlan, GroupRequest, RankBalance, plan_group
from colo.vllm.estimator import Estimate, EstimateRefused, EstimateRequest, estimate, estimate_view
from colo.vllm.extra_args import extra_arg_refusal
from colo.vllm.memory_inputs import FLASHINFER_SAMPLER_ENV
from colo.vllm.mps import MpsClient, gpu_as_client, mps_client, unmeasured_reason
from colo.vllm.process.budget import ProcessBudget, ProcessSpec, geometry_for
from colo.vllm.process.calibrated import calibrated
from colo.vllm.process.cudagraph import SMALL_CAPTURE_SIZES, kib_per_graph_field
from colo.vllm.process.engine_limits import (
    EngineLimits,
    default_max_model_len,
    position_ceiling,
    resolve_limits,
)
from colo.vllm.process.kv_cache import KV_DTYPE_BYTES
from colo.vllm.process.model_dtype import served_architecture
from colo.vllm.process.refusals import ALLOW_LONG_ENV, ServerSettings, batch_limits_refusal, vllm_refusals
from colo.vllm.process.weights import parameter_parts
from colo.vllm.rerank import reranker_refusal
from colo.vllm.rules import (
    VllmRules,
    dtype_names,
    kv_cache_memory_bytes_missing,
    measured_constants,
    release_key,
    rules_for,
    same_release,
    supported_range,
)
from colo.vllm.serve_args import vllm_arguments
from colo.vllm.serve_cli import ServeArgsRefusal, serve_args_refusal
from colo.vllm.views import budget_view, gpu_view, in_gib

__all__ = [
    "ALLOW_LONG_ENV",
    "CALIBRATED_FIGURES",
    "FLASHINFER_SAMPLER_ENV",
    "KV_DTYPE_BYTES",
    "MAX_CONFIG_BYTES",
    "SMALL_CAPTURE_SIZES",
    "AppliedCalibration",
    "ArchitectureError",
    "Calibration",
    "CalibrationEntry",
    "EngineLimits",
    "Estimate",
    "EstimateRefused",
    "EstimateRequest",
    "GpuPlan",
    "GroupPlan",
    "GroupRequest",
    "HubError",
    "HubModel",
    "ModelArchitecture",
    "MpsClient",
    "Observation",
    "ProcessBudget",
    "ProcessSpec",
    "QuantizationRefused",
    "RankBalance",
    "ServeArgsRefusal",
    "ServerPlan",
    "ServerRequest",
    "ServerSettings",
    "VllmRules",
    "all_kv_cache_dtypes",
    "all_quantization_names",
    "architecture_from_mapping",
    "architecture_from_path",
    "assumed_rules_warning",
    "assumption_refusal",
    "batch_limits_refusal",
    "budget_view",
    "calibrated",
    "catalog_architecture",
    "check_quantization_name",
    "default_max_model_len",
    "dtype_names",
    "estimate",
    "estimate_view",
    "extra_arg_refusal",
    "geometry_for",
    "gpu_as_client",
    "gpu_view",
    "header_length",
    "in_gib",
    "kib_per_graph_field",
    "kv_cache_memory_bytes_missing",
    "measured_constants",
    "mps_client",
    "named_model",
    "parameter_parts",
    "parse_config_json",
    "parse_header",
    "plan_gpu",
    "plan_group",
    "position_ceiling",
    "quant_release",
    "release_key",
    "reranker_refusal",
    "resolve_architecture",
    "resolve_limits",
    "rules_for",
    "same_release",
    "serve_args_refusal",
    "served_architecture",
    "supported_range",
    "tensor_bytes_by_part",
    "unmeasured_reason",
    "vllm_arguments",
    "vllm_refusals",
]
