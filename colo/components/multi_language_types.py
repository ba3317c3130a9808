"""A server's keys for colo's component in other languages (colo.components.multi_language).

Generated from colo/config/schema.py by `python -m colo.config.generate`; do not edit by hand. Pulumi's
component host infers the provider schema from these annotations, so they stay plain, evaluated types.
"""

from typing import NotRequired, TypedDict


class Speculative(TypedDict):
    """The stack schema's Speculative."""

    method: str
    num_speculative_tokens: NotRequired[int]


class VllmBuild(TypedDict):
    """How an image colo's catalog does not know was built, as its build files say (each key of colo/catalog/images.yaml's build facts: a version or git ref, or false where the image installs none)."""

    # Not offered here: flashinfer, tritonKernels, deepGemm, deepEp, pplxKernels, xformers (either of two types, which the schema cannot say).
    cuda: NotRequired[str]
    python: NotRequired[str]
    torch: NotRequired[str]
    nccl: NotRequired[str]


class VllmRelease(TypedDict):
    """Which vLLM runs the server. The version selects the memory rules the budget mirrors; the image decides the build (colo/catalog/images.yaml), which an image the catalog lacks states in `build`."""

    version: NotRequired[str]
    image: NotRequired[str]
    build: NotRequired[VllmBuild]
    flashinfer_sampler: NotRequired[bool]
    assume_rules_of: NotRequired[str]


class Server(TypedDict):
    """One vLLM server: the model, where its architecture is read from, and the engine limits."""

    model: str
    revision: NotRequired[str]
    profile: NotRequired[str]
    weights_uri: NotRequired[str]
    quantization: NotRequired[str]
    kv_cache_dtype: NotRequired[str]
    dtype: NotRequired[str]
    max_model_len: NotRequired[int]
    allow_long_max_model_len: NotRequired[bool]
    max_num_seqs: NotRequired[int]
    max_num_batched_tokens: NotRequired[int]
    speculative: NotRequired[Speculative]
    language_model_only: NotRequired[bool]
    limit_mm_per_prompt: NotRequired[dict[str, int]]
    skip_mm_profiling: NotRequired[bool]
    trust_remote_code: NotRequired[bool]
    enforce_eager: NotRequired[bool]
    cudagraph_capture_sizes: NotRequired[list[int]]
    gpu_memory_utilization: NotRequired[float]
    kv_cache_memory_bytes: NotRequired[int]
    tensor_parallel_size: NotRequired[int]
    group_gpu: NotRequired[int]
    mps_active_thread_percentage: NotRequired[int]
    vllm: NotRequired[VllmRelease]
    extra_args: NotRequired[list[str]]
    cpu: NotRequired[str]
    memory: NotRequired[str]
