"""What `colo estimate` is asked to size: one vLLM process, validated with the stack schema's own types.

Every field that has a stack key takes that key's type from colo.config.schema, so a flag accepts exactly
what the stack file accepts. Field names are the flags' names (`max_model_len` is `--max-model-len`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from colo.catalog.images import ImageLookupError, UnknownImage, find_image
from colo.config.schema import (
    GpuComputeCapability,
    GpuMemoryMiB,
    GpuMemoryUtilization,
    HubRevision,
    KvCacheDtype,
    KvCacheMemoryBytes,
    MaxModelLen,
    MaxNumBatchedTokens,
    MaxNumSeqs,
    MmLimits,
    ModelDtype,
    NumSpeculativeTokens,
    Quantization,
    Speculative,
    SpeculativeMethod,
    TensorParallelSize,
    VllmVersion,
)
from colo.vllm import EstimateRequest


def official_torch(vllm_version: str) -> str | None:
    """The PyTorch of the release's official image, which `colo estimate` sizes by default (None: unknown)."""
    try:
        return find_image(f"vllm/vllm-openai:v{vllm_version}").build.torch
    except (ImageLookupError, UnknownImage):
        return None


Runner = Literal["generate", "pooling"]
# --pipeline-parallel-size: `colo estimate` only (a stack server runs on one GPU); vLLM's ParallelConfig takes >= 1.
PipelineParallelSize = Annotated[int, Field(ge=1, le=1024)]


def _refusal(field: str, message: str) -> ValidationError:
    error = InitErrorDetails(type=PydanticCustomError("colo_estimate", message), loc=(field,), input=None)
    return ValidationError.from_exception_data("EstimateArguments", [error])


class EstimateArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    model: str = Field(min_length=1)
    revision: HubRevision | None = None
    gpu: str | None = None
    gpu_memory_mib: GpuMemoryMiB | None = None
    gpu_compute_capability: GpuComputeCapability | None = None
    vllm_version: VllmVersion
    assume_rules_of: VllmVersion | None = None
    gpu_memory_utilization: GpuMemoryUtilization | None = None
    max_model_len: MaxModelLen | None = None
    max_num_seqs: MaxNumSeqs | None = None
    max_num_batched_tokens: MaxNumBatchedTokens | None = None
    kv_cache_dtype: KvCacheDtype = "auto"
    quantization: Quantization | None = None
    enforce_eager: bool = False
    runner: Runner = "generate"
    tensor_parallel_size: TensorParallelSize = 1
    kv_cache_memory_bytes: KvCacheMemoryBytes | None = None
    free_memory_gib: Annotated[float, Field(ge=0.0)] | None = None
    num_speculative_tokens: NumSpeculativeTokens | None = None
    speculative_method: SpeculativeMethod | None = None
    allow_long_max_model_len: bool = False
    language_model_only: bool = False
    limit_mm_per_prompt: MmLimits | None = None
    skip_mm_profiling: bool = False
    trust_remote_code: bool = False
    without_flashinfer: bool = False
    no_peer_to_peer: bool = False
    nvswitch: bool = False
    dtype: ModelDtype | None = None
    pipeline_parallel_size: PipelineParallelSize = 1

    @model_validator(mode="after")
    def _gpu_and_speculation_complete(self) -> EstimateArguments:
        if self.gpu is None and self.gpu_memory_mib is None:
            raise _refusal(
                "gpu",
                "name the GPU, or give --gpu-memory-mib and --gpu-compute-capability for a GPU colo's catalog lacks",
            )
        if self.num_speculative_tokens is not None and self.speculative_method is None:
            raise _refusal("num_speculative_tokens", "speculative tokens need --speculative-method")
        return self

    @property
    def speculative(self) -> Speculative | None:
        """The stack schema's speculative block these arguments describe (its default token count)."""
        if self.speculative_method is None:
            return None
        if self.num_speculative_tokens is None:
            return Speculative(method=self.speculative_method)
        return Speculative(method=self.speculative_method, num_speculative_tokens=self.num_speculative_tokens)

    def request(self) -> EstimateRequest:
        """These arguments as the memory model takes them."""
        speculative = self.speculative
        return EstimateRequest(
            model=self.model,
            revision=self.revision,
            vllm_version=self.vllm_version,
            assume_rules_of=self.assume_rules_of,
            gpu=self.gpu,
            gpu_memory_mib=self.gpu_memory_mib,
            gpu_compute_capability=self.gpu_compute_capability,
            gpu_memory_utilization=self.gpu_memory_utilization,
            max_model_len=self.max_model_len,
            max_num_seqs=self.max_num_seqs,
            max_num_batched_tokens=self.max_num_batched_tokens,
            kv_cache_dtype=self.kv_cache_dtype,
            quantization=self.quantization,
            enforce_eager=self.enforce_eager,
            pooling=self.runner == "pooling",
            tensor_parallel_size=self.tensor_parallel_size,
            kv_cache_memory_bytes=self.kv_cache_memory_bytes,
            free_memory_gib=self.free_memory_gib,
            num_speculative_tokens=speculative.num_speculative_tokens if speculative else 0,
            speculative_method=speculative.method if speculative else None,
            allow_long_max_model_len=self.allow_long_max_model_len,
            language_model_only=self.language_model_only,
            limit_mm_per_prompt=dict(self.limit_mm_per_prompt) if self.limit_mm_per_prompt else None,
            skip_mm_profiling=self.skip_mm_profiling,
            trust_remote_code=self.trust_remote_code,
            flashinfer_installed=not self.without_flashinfer,
            torch_release=official_torch(self.vllm_version),
            peer_to_peer=not self.no_peer_to_peer,
            nvswitch=self.nvswitch,
            dtype=self.dtype,
            pipeline_parallel_size=self.pipeline_parallel_size,
        )
