"""The stack configuration, as typed pydantic models.

Keys are camelCase because that is how Pulumi stack config is written (`pulumi config set --path
pairs[0].llm.maxModelLen 32768`). Every model forbids unknown keys so that a typo is an error that names
its path instead of a silently ignored setting.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import InitErrorDetails, PydanticCustomError

import colo.config.formats as formats
from colo.catalog.images import (
    BuildFacts,
    ImageBuild,
    ImageLookupError,
    MovingImageTag,
    UnknownImage,
    find_image,
    official_build,
    split_reference,
)
from colo.config.cli_values import CliText
from colo.echo import shown
from colo.roles import START_ORDER, Role
from colo.s3_uri import s3_prefix_problem
from colo.vllm import (
    KV_DTYPE_BYTES,
    RankBalance,
    ServeArgsRefusal,
    all_kv_cache_dtypes,
    all_quantization_names,
    assumption_refusal,
    check_quantization_name,
    dtype_names,
    extra_arg_refusal,
    quant_release,
    rules_for,
    same_release,
    serve_args_refusal,
)

NodeImage = Literal["al2023-nvidia", "bottlerocket-nvidia", "gpu-operator-cdi", "generic-nvidia-runtime"]
GpuPairing = Literal["uuid-handoff", "dra", "time-slice"]
# How the servers of one GPU share its compute (docs/compute-sharing.md): the driver's default time slices between
# their CUDA contexts, or CUDA MPS, under which their kernels run at the same time.
ComputeSharing = Literal["time-slice", "mps"]
# CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: an MPS client's share of the GPU's threads, in percent.
MpsThreadPercentage = Annotated[int, Field(ge=1, le=100)]
SpeculativeMethod = Literal["mtp", "eagle", "eagle3", "ngram"]
# vLLM's --dtype names in every release colo mirrors (colo/vllm/rules.yaml dtype_names: the same six from 0.8.0 to
# 0.33.0, and in 0.34.0 config/model.py::ModelDType); a server's pinned release narrows them in ServerSpec._names_of_the_release.
ModelDtype = Literal["auto", "half", "float16", "bfloat16", "float", "float32"]
# vLLM's own names, for every release colo knows (colo/vllm/checkpoint/quant_methods.yaml); a server's pinned release
# narrows them in ServerSpec._names_of_the_release. The CLI takes its choices from here too.
QUANTIZATION_CHOICES = all_quantization_names()
KV_CACHE_DTYPE_CHOICES = ("auto", *(name for name in all_kv_cache_dtypes() if name in KV_DTYPE_BYTES))

# Every pattern is ASCII and matched whole (fullmatch): `$` accepts a trailing newline, `\d` other scripts' digits.
_PAIR_NAME = re.compile(r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?")
_VERSION = re.compile(r"[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}(\.[0-9]{1,4})?(\.post[0-9]{1,4})?")
_KUBERNETES_MINOR = re.compile(r"1\.[0-9]{1,2}")
# Namespaces the cluster runs on; colo declares its namespace (with Pod Security labels) and would take
# one of these over.
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
MAX_EXTRA_ARGS = 256
MAX_EXTRA_ARG_CHARS = 16 * 1024
MAX_PATH_CHARS = 4096
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _release_number(value: str) -> str:
    if not _VERSION.fullmatch(value):
        raise ValueError(f"'{shown(value)}' is not a vLLM release number; write it like 0.11.0")
    return value


def _checked(check: Callable[[str], str | None]) -> AfterValidator:
    """A pydantic validator from a formats check (None: fine; else the reason)."""

    def validate(value: str) -> str:
        problem = check(value)
        if problem:
            raise ValueError(problem)
        return value

    return AfterValidator(validate)


def _plain_argument(value: str) -> str:
    """One argument vLLM can be started with: not empty, not huge, no control characters exec or YAML
    would mangle (newlines and tabs are fine)."""
    if not value:
        raise ValueError("an empty argument; drop it")
    if len(value) > MAX_EXTRA_ARG_CHARS:
        raise ValueError(
            f"{len(value)} characters; an argument holds at most {MAX_EXTRA_ARG_CHARS} characters"
        )
    if _CONTROL.search(value):
        raise ValueError(f"'{shown(value)}' holds control characters")
    return value


def _s3_or_path(value: str) -> str:
    if value.startswith("s3://"):
        problem = s3_prefix_problem(value)
        if problem:
            raise ValueError(problem)
    return value


DnsSubdomain = Annotated[str, _checked(formats.dns_subdomain)]
ExtraArg = Annotated[CliText, AfterValidator(_plain_argument)]


# The limits a stack key and a `colo estimate` flag share (colo.config.estimate): each is defined once here.
MaxModelLen = Annotated[int, Field(ge=16, le=10_000_000)]
MaxNumSeqs = Annotated[int, Field(ge=1, le=65_536)]
HubRevision = Annotated[str, _checked(formats.hub_revision)]  # a branch, tag or commit the Hub resolves
MmLimits = dict[str, Annotated[int, Field(ge=0, le=1024)]]  # --limit-mm-per-prompt items by modality
MaxNumBatchedTokens = Annotated[int, Field(ge=16, le=10_000_000)]
# vLLM accepts (0, 1]: vllm 0.33.0 config/cache.py::CacheConfig (Field(gt=0, le=1)); 0.34.0 too, unset by default.
GpuMemoryUtilization = Annotated[float, Field(gt=0.0, le=1.0)]
KvCacheMemoryBytes = Annotated[int, Field(gt=0, le=2**40)]
NumSpeculativeTokens = Annotated[int, Field(ge=1, le=16)]
TensorParallelSize = Annotated[int, Field(ge=1)]
# The tensor-parallel groups a stack's LLM may span: one node's GPUs, in the sizes every multi-GPU instance type
# of colo's catalog divides into (2, 4, 8 GPUs) and vLLM's custom all-reduce serves (2, 4, 6, 8).
GROUP_SIZES = (1, 2, 4, 8)


def _group_size(value: int) -> int:
    if value not in GROUP_SIZES:
        raise ValueError(
            f"{value} GPUs: colo plans an LLM on 1, 2, 4 or 8 GPUs of one node (groups that fill the 2-, 4- and "
            f"8-GPU nodes of its instance catalog without a stranded GPU)"
        )
    return value


StackTensorParallelSize = Annotated[int, AfterValidator(_group_size)]
GpuMemoryMiB = Annotated[int, Field(ge=1024)]  # no GPU under 1 GiB holds a vLLM process


def _capability_as_text(value: object) -> object:
    """A YAML number (8.9, 12.0, 12) is the capability nvidia-smi prints as that text."""
    if isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value}.0"
    return value


# "8.9" as nvidia-smi's compute_cap prints it
GpuComputeCapability = Annotated[
    str, BeforeValidator(_capability_as_text), _checked(formats.compute_capability)
]

VllmVersion = Annotated[str, AfterValidator(_release_number)]


def _a_vllm_method(value: str) -> str:
    if value not in QUANTIZATION_CHOICES:
        raise ValueError(
            f"'{value}' is no vLLM quantization method; vLLM's names: {', '.join(QUANTIZATION_CHOICES)}"
        )
    return value


def _a_vllm_kv_dtype(value: str) -> str:
    if value in all_kv_cache_dtypes() and value not in KV_CACHE_DTYPE_CHOICES:
        raise ValueError(
            f"colo does not size vLLM's kv-cache dtype '{value}' (its layout packs values with per-block "
            f"scales); sized: {', '.join(KV_CACHE_DTYPE_CHOICES)}"
        )
    if value not in all_kv_cache_dtypes():
        raise ValueError(
            f"'{value}' is no vLLM kv-cache dtype; vLLM's names: {', '.join(all_kv_cache_dtypes())}"
        )
    return value


# vLLM's own names in some release colo mirrors; ServerSpec narrows them to the server's pinned release.
Quantization = Annotated[str, AfterValidator(_a_vllm_method)]
KvCacheDtype = Annotated[str, AfterValidator(_a_vllm_kv_dtype)]


def _error(loc: tuple[str | int, ...], message: str, value: object = None) -> InitErrorDetails:
    """A validation error at `loc` (camelCase keys), for checks that span several parts of the config."""
    return InitErrorDetails(type=PydanticCustomError("colo_config", message), loc=loc, input=value)


def _raise_if(problem: str | None, prefix: str = "") -> None:
    """Field validators report what colo.config.formats found wrong, if anything."""
    if problem:
        raise ValueError(f"{prefix}{problem}")


def _check_labels(labels: Mapping[str, str]) -> None:
    """Every key and value a Kubernetes label may carry (node selectors, pod and monitor labels)."""
    for key, label in labels.items():
        problem = formats.label_key(key) or formats.label_value(label)
        if problem:
            raise ValueError(f"{problem} (key '{shown(key)}')")


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        validate_default=True,
        allow_inf_nan=False,  # `.inf` and `.nan` are YAML floats; no setting means either
    )


def require_pinned(image: str | None, example_tag: str = "v0.11.0") -> str | None:
    """An image reference a registry accepts, pinned by an explicit tag (not latest) or a full digest."""
    if image is None:
        return image
    parsed = formats.image_reference(image, example_tag)
    if isinstance(parsed, str):
        raise ValueError(parsed)
    return image


# Build facts the budget reads, today: FlashInfer decides the dummy sampler's top-k/top-p path.
BUDGET_BUILD_KEYS = ("flashinfer",)
# A package the build installs: its version or git ref, true when the version is not known, false when absent.
BuildPackage = Annotated[str, Field(min_length=1, max_length=128)] | bool


class VllmBuild(_Model):
    """How an image colo's catalog does not know was built, as its build files say (each key of
    colo/catalog/images.yaml's build facts: a version or git ref, or false where the image installs none)."""

    cuda: Annotated[str, Field(max_length=32)] | None = None
    python: Annotated[str, Field(max_length=32)] | None = None
    torch: Annotated[str, Field(max_length=64)] | None = None
    nccl: Annotated[str, Field(max_length=32)] | None = None
    flashinfer: BuildPackage | None = Field(
        default=None, description="the FlashInfer release the image installs, or false: the sampler's path"
    )
    triton_kernels: BuildPackage | None = None
    deep_gemm: BuildPackage | None = None
    deep_ep: BuildPackage | None = None
    pplx_kernels: BuildPackage | None = None
    xformers: BuildPackage | None = None


def _moving_tag_refusal(moving: MovingImageTag, version: str | None) -> str:
    """The catalog's refusal (which names the release the tag is today), and, where the stack states another
    release, the tag of that one: pinning today's would contradict vllm.version."""
    if version is None or moving.today is None or moving.today.endswith(f":v{version}"):
        return str(moving)
    return (
        f"{moving}; this server states vllm.version {version}, so give an explicit tag such as :v{version} or "
        "a digest (or pin today's and set vllm.version to its release)"
    )


class VllmImage(_Model):
    """Which vLLM runs the server. The version selects the memory rules the budget mirrors; the image decides the
    build (colo/catalog/images.yaml), which an image the catalog lacks states in `build`."""

    version: VllmVersion = "0.11.0"
    image: str | None = Field(
        default=None,
        description="Container image; default vllm/vllm-openai:v<version>. Must carry a pinned tag.",
    )
    build: VllmBuild | None = Field(
        default=None,
        description="The build facts of an image colo's catalog does not know (or leaves unstated); refused "
        "for one it knows",
    )
    flashinfer_sampler: bool | None = Field(
        default=None,
        description="VLLM_USE_FLASHINFER_SAMPLER for the server: false samples top-k/top-p without FlashInfer "
        "(the budget sizes that path); true where the release samples with FlashInfer by default and the image "
        "carries it; omitted = the release's default",
    )
    assume_rules_of: VllmVersion | None = Field(
        default=None,
        description="At your own risk: plan a vLLM release newer than every release colo mirrors with the "
        "memory rules, argument tables and image build facts of this mirrored one (the newest, say); the "
        "plan warns that it does",
    )

    @field_validator("image")
    @classmethod
    def _pinned(cls, value: str | None, info: ValidationInfo) -> str | None:
        """A moving tag is refused in the catalog's words (which name the release `latest` is today); any other
        unpinned image is told to pin the release the stack states (`version` is validated first)."""
        version = info.data.get("version")
        if value is not None and "@" not in value and split_reference(value)[1] == "latest":
            try:
                find_image(value)
            except MovingImageTag as moving:
                raise ValueError(_moving_tag_refusal(moving, version)) from None
            except (ImageLookupError, ValueError):
                pass  # refused below, as any unpinned reference
        return require_pinned(value, f"v{version}" if version else "v0.11.0")

    @model_validator(mode="after")
    def _the_image_runs_the_version_and_its_build_is_known(self) -> VllmImage:
        """The budget mirrors `version` and the build of the image that runs it: neither may be assumed, unless
        the stack assumes another release's rules for it (`assumeRulesOf`, with that release's build facts)."""
        if self.assume_rules_of is not None:
            return self._image_under_assumed_rules(self.assume_rules_of)
        if self.image is None and official_build(self.version) is None:
            return self._default_image_without_facts()
        try:
            # A digest of the official image takes the stated release's catalogued facts, unless the stack
            # states the build itself (the way such a digest was accepted before the catalog vouched for it).
            release = self.version if self.build is None else None
            known = find_image(self.resolved_image, stated_release=release)
        except UnknownImage:
            if self.build is None or self._unstated(None):
                keys = ", ".join(f"vllm.build.{k}" for k in BUDGET_BUILD_KEYS)
                raise ValueError(
                    f"image {shown(self.resolved_image)} is not in colo's image catalog (colo/catalog/images.yaml), "
                    "so how it was built cannot be assumed: state its build facts from its build files under "
                    f"vllm.build (the budget reads {keys}), or use an image the catalog lists"
                ) from None
            return self
        except ImageLookupError as exc:
            raise ValueError(str(exc)) from None
        return self._agrees_with(known)

    def _image_under_assumed_rules(self, assumed: str) -> VllmImage:
        """A release colo does not mirror yet, planned with `assumed`'s rules: an image the catalog does not know
        takes the assumed release's build facts where vllm.build leaves them unstated (the plan says so)."""
        if (refused := assumption_refusal(self.version, assumed)) is not None:
            raise ValueError(f"assumeRulesOf: {refused}")
        if self.image is None:
            return self
        try:
            known = find_image(self.resolved_image)
        except UnknownImage:
            return self
        except ImageLookupError as exc:
            raise ValueError(str(exc)) from None
        return self._agrees_with(known)

    def _agrees_with(self, known: ImageBuild) -> VllmImage:
        """The catalog's image runs `version`, and the stack states only the facts the catalog leaves unstated."""
        if known.vllm is not None and not same_release(known.vllm, self.version):
            raise ValueError(
                f"image {shown(self.resolved_image)} is vLLM {known.vllm}, but vllm.version is {self.version}, "
                "whose memory rules the budget mirrors; set both to the same release"
            )
        if self.build is not None and not set(self.build.model_fields_set) <= set(known.build.missing()):
            stated = sorted(set(self.build.model_fields_set) - set(known.build.missing()))
            raise ValueError(
                f"colo's image catalog says how {shown(self.resolved_image)} is built ({known.source}); drop "
                f"vllm.build.{', vllm.build.'.join(stated)}"
            )
        if missing := self._unstated(known.build):
            raise ValueError(
                f"colo's image catalog does not say what {shown(self.resolved_image)} holds for "
                f"{', '.join(missing)}: state vllm.build.{', vllm.build.'.join(missing)} from its build files"
            )
        return self

    def _default_image_without_facts(self) -> VllmImage:
        """The official image of a release the catalog holds no build files for (0.15.x published no source
        distribution to read them from): the stack states the facts; an unmirrored release is refused elsewhere."""
        try:
            rules_for(self.version)
        except ValueError:
            return self  # refused at vllm.version, with the releases colo mirrors
        if self._unstated(None):
            raise ValueError(
                f"colo's image catalog holds no build files of {self.resolved_image}: state vllm.build."
                f"{', vllm.build.'.join(BUDGET_BUILD_KEYS)} (the budget reads it), or pin a release the catalog holds"
            )
        return self

    def _unstated(self, catalog: BuildFacts | None) -> list[str]:
        """Budget keys neither the catalog nor the stack states."""
        return [
            key
            for key in BUDGET_BUILD_KEYS
            if (catalog is None or getattr(catalog, key) is None)
            and (self.build is None or getattr(self.build, key) is None)
        ]

    @property
    def resolved_image(self) -> str:
        return self.image or f"vllm/vllm-openai:v{self.version}"

    @property
    def rules_version(self) -> str:
        """The release whose rules and tables size this server: its own, or the one it assumes."""
        return self.assume_rules_of or self.version

    @property
    def flashinfer_installed(self) -> bool:
        """Whether the image carries FlashInfer (its dummy sampler's path): the stack's word, else the catalog's
        (for a server that assumes another release's rules, that release's official image where the catalog
        does not know its own)."""
        stated = self.build.flashinfer if self.build is not None else None
        if stated is None:
            try:
                stated = find_image(self.resolved_image, stated_release=self.version).build.flashinfer
            except UnknownImage:
                assumed = official_build(self.assume_rules_of) if self.assume_rules_of else None
                if assumed is None:
                    raise
                stated = assumed.build.flashinfer
        return bool(stated)

    @property
    def torch_release(self) -> str | None:
        """The build's PyTorch (its libraries' non-torch memory is measured per build): the stack's word, else the
        catalog's; None where neither states it."""
        stated = self.build.torch if self.build is not None else None
        if stated is None:
            try:
                stated = find_image(self.resolved_image, stated_release=self.version).build.torch
            except (ImageLookupError, UnknownImage):
                return None
        return stated

    @property
    def sampler_flashinfer(self) -> bool:
        """Whether the sampler may take FlashInfer: the image carries it and flashinferSampler does not turn
        it off. The budget sizes the dummy sampler run by this (colo/vllm/process/activation.py)."""
        return self.flashinfer_installed and self.flashinfer_sampler is not False

    @model_validator(mode="after")
    def _flashinfer_sampler_is_sized(self) -> VllmImage:
        """`true` is the release's default where it samples with FlashInfer; where it does not (0.11.1-0.20:
        "FlashInfer only with VLLM_USE_FLASHINFER_SAMPLER=1", colo/vllm/rules.yaml sampler_path sort/triton)
        colo has no rule for the FlashInfer sampler, and an image without FlashInfer fails at the first sample
        (vllm 0.33.0 v1/sample/ops/topk_topp_sampler.py::flashinfer_sampler_supported raises when it was asked
        for)."""
        if self.flashinfer_sampler is not True:
            return self
        try:
            path = rules_for(self.version).sampler_path
        except ValueError:
            return self  # refused at vllm.version
        if path in ("sort", "triton"):
            raise ValueError(
                f"vLLM {self.version} samples without FlashInfer by default and colo does not size its FlashInfer "
                "sampler: drop flashinferSampler, or set it to false"
            )
        try:
            installed = self.flashinfer_installed
        except (ImageLookupError, UnknownImage):
            return self  # the image itself is refused above
        if not installed:
            raise ValueError(
                f"image {shown(self.resolved_image)} carries no FlashInfer (its build facts), so vLLM cannot sample "
                "with it: drop flashinferSampler, or set it to false"
            )
        return self


class Speculative(_Model):
    method: SpeculativeMethod
    num_speculative_tokens: NumSpeculativeTokens = 1


class ServerSpec(_Model):
    """One vLLM server: the model, where its architecture is read from, and the engine limits."""

    model: Annotated[str, _checked(formats.model_id)] = Field(
        description="Hugging Face model id; also the served model name"
    )
    revision: HubRevision | None = Field(
        default=None,
        description="The Hub revision the model is read at (a branch, tag or commit): colo sizes the commit it "
        "resolves to and passes that commit to vLLM (--revision), so the servers load what was planned; omitted = "
        "the main branch as it is at plan time and at start-up, which the plan warns about",
    )
    profile: (
        Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS), AfterValidator(_s3_or_path)] | None
    ) = Field(
        default=None,
        description="Where the architecture is read: omitted = colo's catalog; a config.json or model "
        "directory path; or an s3://bucket/prefix/ holding config.json and *.safetensors",
    )
    weights_uri: Annotated[str, _checked(s3_prefix_problem)] | None = Field(
        default=None,
        description="s3://bucket/prefix/ copied into the model volume before start; omitted = the "
        "Hugging Face Hub at start-up",
    )
    quantization: Quantization | None = Field(
        default=None,
        description="vLLM's --quantization, by vLLM's own names for the pinned release; omitted = what the "
        "checkpoint's config declares. Given, it must agree with that config as vLLM checks it, or name a "
        "method that quantizes a full-precision checkpoint at load (fp8, fp8_per_tensor, ...)",
    )
    kv_cache_dtype: KvCacheDtype = Field(
        default="auto", description="vLLM's --kv-cache-dtype names for the pinned release"
    )
    dtype: ModelDtype | None = Field(
        default=None,
        description="vLLM's --dtype: the dtype the model runs in (omitted: not passed, vLLM's auto: the "
        "checkpoint's, float16 for float32 checkpoints, float16 on GPUs without bfloat16 from 0.9.0)",
    )
    max_model_len: MaxModelLen | None = None
    allow_long_max_model_len: bool = Field(
        default=False,
        description="Set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: accept a maxModelLen above the model's own limit",
    )
    max_num_seqs: MaxNumSeqs | None = None
    max_num_batched_tokens: MaxNumBatchedTokens | None = None
    speculative: Speculative | None = None
    language_model_only: bool = Field(
        default=False,
        description="--language-model-only (vLLM >= 0.17): no vision tower is built and no image is profiled",
    )
    limit_mm_per_prompt: MmLimits | None = Field(
        default=None,
        description="--limit-mm-per-prompt, items per prompt by modality (image, video, audio); 0 for every "
        "modality of the tower leaves it unbuilt (vLLM >= 0.16)",
    )
    skip_mm_profiling: bool = Field(
        default=False,
        description="--skip-mm-profiling (vLLM >= 0.10.1): the vision encoder is built but not profiled",
    )
    trust_remote_code: bool = Field(
        default=False,
        description="--trust-remote-code: vLLM may run the repository's own code (a config.json with auto_map whose "
        "architecture vLLM does not implement, or whose AutoConfig entry serves a model_type neither vLLM nor "
        "transformers has a config class for); colo sizes the architecture config.json declares",
    )
    enforce_eager: Literal["auto"] | bool = "auto"
    cudagraph_capture_sizes: (
        Annotated[list[Annotated[int, Field(ge=1, le=65_536)]], Field(max_length=1024)] | None
    ) = None
    gpu_memory_utilization: GpuMemoryUtilization | None = Field(
        default=None, description="Override the derived value; checked the same way"
    )
    kv_cache_memory_bytes: KvCacheMemoryBytes | None = Field(
        default=None, description="Override: a fixed KV pool (vLLM >= 0.10.2)"
    )
    tensor_parallel_size: StackTensorParallelSize = Field(
        default=1,
        description="The LLM only: vLLM's --tensor-parallel-size, the GPUs of one node its ranks span (1, 2, 4 "
        "or 8); the pair's other servers run on those GPUs, one GPU each",
    )
    group_gpu: Annotated[int, Field(ge=0, le=7)] | None = Field(
        default=None,
        description="A companion of an LLM with tensorParallelSize N: which GPU of the group it runs on (0 .. "
        "N-1, the LLM's rank on that GPU); omitted: the companions take the group's GPUs one each, in start "
        "order",
    )
    mps_active_thread_percentage: MpsThreadPercentage | None = Field(
        default=None,
        description="With cluster.computeSharing: mps, a companion's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: the share of "
        "the GPU's threads its kernels may occupy; omitted = no cap",
    )
    vllm: VllmImage = VllmImage()
    extra_args: Annotated[list[ExtraArg], Field(max_length=MAX_EXTRA_ARGS)] = Field(default_factory=list)
    cpu: CliText | None = Field(default=None, description="CPU request; default by role (colo.roles)")
    memory: str | None = Field(
        default=None, description="Memory request and limit; default by role (colo.roles)"
    )

    @field_validator("cpu")
    @classmethod
    def _cpu_quantity(cls, value: str | None) -> str | None:
        _raise_if(formats.cpu_quantity(value) if value is not None else None)
        return value

    @field_validator("memory")
    @classmethod
    def _memory_quantity(cls, value: str | None) -> str | None:
        _raise_if(formats.byte_quantity(value, "memory") if value is not None else None)
        return value

    @field_validator("cudagraph_capture_sizes")
    @classmethod
    def _sorted_unique(cls, value: list[int] | None) -> list[int] | None:
        if value is None:
            return value
        if not value:
            raise ValueError("give at least one capture size, or set enforceEager: true for none")
        return sorted(set(value))

    @model_validator(mode="after")
    def _extra_args_leave_derived_flags_alone(self) -> ServerSpec:
        """Read as the pinned vLLM reads its command line, so no spelling of a derived flag gets through."""
        errors = [
            _error(("extraArgs", index), reason, arg)
            for index, arg in enumerate(self.extra_args)
            if (reason := extra_arg_refusal(arg, self.vllm.rules_version)) is not None
        ]
        if not errors and self.extra_args and (refused := self._vllm_parser_refusal()) is not None:
            where = ("extraArgs",) if refused.index is None else ("extraArgs", refused.index)
            arg = self.extra_args[refused.index] if refused.index is not None else " ".join(self.extra_args)
            errors.append(_error(where, f"vLLM {self.vllm.rules_version} would not start: {refused}", arg))
        if errors:
            raise ValidationError.from_exception_data(type(self).__name__, errors)
        return self

    def _vllm_parser_refusal(self) -> ServeArgsRefusal | None:
        """What the pinned release's own `vllm serve` parser makes of the extra arguments after the model."""
        try:
            return serve_args_refusal(self.vllm.rules_version, self.extra_args, [self.model])
        except ValueError:  # a release colo does not mirror: refused at vllm.version
            return None

    @field_validator("quantization")
    @classmethod
    def _a_vllm_method(cls, value: str | None) -> str | None:
        if value is not None and value not in all_quantization_names():
            raise ValueError(
                f"'{value}' is no vLLM quantization method; vLLM's names: {', '.join(all_quantization_names())}"
            )
        return value

    @field_validator("kv_cache_dtype")
    @classmethod
    def _a_vllm_kv_dtype(cls, value: str) -> str:
        if value in all_kv_cache_dtypes() and value != "auto" and value not in KV_DTYPE_BYTES:
            raise ValueError(
                f"colo does not size vLLM's kv-cache dtype '{value}' (its layout packs values with per-block scales); sized: auto, {', '.join(KV_DTYPE_BYTES)}"
            )
        if value not in all_kv_cache_dtypes():
            raise ValueError(
                f"'{value}' is no vLLM kv-cache dtype; vLLM's names: {', '.join(all_kv_cache_dtypes())}"
            )
        return value

    @model_validator(mode="after")
    def _names_of_the_release(self) -> ServerSpec:
        """vLLM's argparse accepts only its release's names; whether the name fits the checkpoint is checked
        once its config is read (colo.vllm.checkpoint.quant_methods.resolve_architecture)."""
        version = self.vllm.rules_version
        if self.quantization is not None:
            check_quantization_name(self.quantization, version)
        names = dtype_names(version)
        if self.dtype is not None and names is not None and self.dtype not in names:
            raise ValueError(f"vLLM {version} has no --dtype '{self.dtype}'; it accepts: {', '.join(names)}")
        dtypes = quant_release(version).kv_cache_dtypes
        if self.kv_cache_dtype not in dtypes:
            raise ValueError(
                f"vLLM {version} has no kv-cache dtype '{self.kv_cache_dtype}'; it accepts: "
                f"{', '.join(dtypes)}"
            )
        return self

    @model_validator(mode="after")
    def _one_memory_override(self) -> ServerSpec:
        if self.enforce_eager is True and self.cudagraph_capture_sizes:
            raise ValueError("cudagraphCaptureSizes has no effect with enforceEager: true; drop one of them")
        return self


class Pair(_Model):
    """The servers that share one GPU, one field per role (colo.roles)."""

    name: str
    llm: ServerSpec
    embedding: ServerSpec
    reranker: ServerSpec | None = None
    rank_balance: RankBalance = Field(
        default="equalize",
        description="With llm.tensorParallelSize > 1, where the companions leave the GPUs of the group unequal "
        "free memory (every rank takes the same slice, sized for the fullest GPU): equalize gives the "
        "difference to the companions on the emptier GPUs (a larger KV cache; a GPU without a companion keeps "
        "it idle, and the plan says how much); refuse refuses the layout",
    )

    def servers(self) -> list[tuple[Role, ServerSpec]]:
        """The configured servers, as the stack file lists them (the LLM first)."""
        by_role = {Role.LLM: self.llm, Role.EMBEDDING: self.embedding, Role.RERANKER: self.reranker}
        return [(role, server) for role, server in by_role.items() if server is not None]

    def servers_in_start_order(self) -> list[tuple[Role, ServerSpec]]:
        configured = dict(self.servers())
        return [(role, configured[role]) for role in START_ORDER if role in configured]

    @property
    def tensor_parallel_size(self) -> int:
        return self.llm.tensor_parallel_size

    def group_gpus(self) -> dict[Role, int]:
        """The GPU of the LLM's group each companion runs on: its groupGpu, else the next GPU in start order."""
        size = self.tensor_parallel_size
        companions = [
            (role, server) for role, server in self.servers_in_start_order() if role is not Role.LLM
        ]
        return {
            role: server.group_gpu if server.group_gpu is not None else index % size
            for index, (role, server) in enumerate(companions)
        }

    @model_validator(mode="after")
    def _only_the_llm_spans_gpus(self) -> Pair:
        """One LLM spans the group; every companion runs on one GPU of it, named within the group."""
        size = self.tensor_parallel_size
        errors: list[InitErrorDetails] = []
        if self.llm.group_gpu is not None:
            errors.append(
                _error(
                    ("llm", "groupGpu"),
                    "the LLM runs on every GPU of its group; groupGpu places a companion (embedding, reranker)",
                    self.llm.group_gpu,
                )
            )
        for role, server in self.servers():
            if role is Role.LLM:
                continue
            if server.tensor_parallel_size != 1:
                errors.append(
                    _error(
                        (str(role), "tensorParallelSize"),
                        f"only the LLM spans GPUs; the {role} server runs on one GPU of the LLM's group "
                        f"(set llm.tensorParallelSize, and groupGpu here to choose the GPU)",
                        server.tensor_parallel_size,
                    )
                )
            if server.group_gpu is not None and server.group_gpu >= size:
                where = (
                    "the LLM runs on one GPU (llm.tensorParallelSize is 1), so there is no group to place it in"
                    if size == 1
                    else f"the LLM's group has {size} GPUs, numbered 0 to {size - 1}"
                )
                errors.append(
                    _error((str(role), "groupGpu"), f"GPU {server.group_gpu}: {where}", server.group_gpu)
                )
        if size == 1 and "rank_balance" in self.model_fields_set:
            errors.append(
                _error(
                    ("rankBalance",),
                    "balances the GPUs of a tensor-parallel LLM; with llm.tensorParallelSize 1 there is one GPU. "
                    "Drop it, or set llm.tensorParallelSize",
                    self.rank_balance,
                )
            )
        if errors:
            raise ValidationError.from_exception_data(type(self).__name__, errors)
        return self

    @field_validator("name")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        if not _PAIR_NAME.fullmatch(value):
            raise ValueError(
                f"'{shown(value)}' is not a DNS label; use lower-case letters, digits and '-', starting "
                "with a letter, at most 40 characters (it names Kubernetes objects)"
            )
        return value


class Cluster(_Model):
    name: Annotated[str, _checked(formats.cluster_name)] = "colo"
    kubernetes_version: str = "1.34"
    node_image: NodeImage = "al2023-nvidia"
    gpu_pairing: GpuPairing = "uuid-handoff"
    namespace: str = "colo"
    native_sidecars: bool | None = Field(
        default=None, description="Restartable init containers; default: on from Kubernetes 1.29"
    )
    compute_sharing: ComputeSharing = Field(
        default="time-slice",
        description="How the servers of a GPU share its compute: time-slice (the driver's default: one context's "
        "kernels at a time) or mps (CUDA MPS: kernels of every server run at once); docs/compute-sharing.md",
    )
    dra_mps_support: bool = Field(
        default=False,
        description="gpuPairing dra with computeSharing mps: the cluster's NVIDIA DRA driver runs with its MPSSupport "
        "feature gate on, as you have checked",
    )
    # How colo reaches a cluster it does not manage (nodePool.mode existing); colo.config.cluster_target says
    # which keys each mode needs. A managed stack reaches its EKS cluster by `name` and the stack's AWS config.
    kubeconfig_context: Annotated[str, Field(min_length=1, max_length=253)] | None = Field(
        default=None,
        description="The kubeconfig context colo deploys through (nodePool.mode existing, where it is "
        "required): never the current context, so a stack goes only to the cluster it names",
    )
    kubeconfig: Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS)] | None = Field(
        default=None,
        description="The kubeconfig file holding kubeconfigContext; default KUBECONFIG, then ~/.kube/config, "
        "as kubectl reads them",
    )
    api_server: str | None = Field(
        default=None,
        description="The API server kubeconfigContext must reach (nodePool.mode existing, where it is "
        "required): its URL as the kubeconfig writes it, e.g. https://127.0.0.1:6443; colo refuses a "
        "preview or update through a context that points at another server",
    )

    @field_validator("kubernetes_version", mode="before")
    @classmethod
    def _quoted_version(cls, value: object) -> object:
        # Unquoted in YAML, 1.30 is the number 1.3: the minor version is lost before colo sees it.
        if isinstance(value, float):
            raise ValueError(
                f"is the number {value} here: YAML reads an unquoted version as a number and drops "
                'trailing zeros (1.30 becomes 1.3); quote it, e.g. kubernetesVersion: "1.30"'
            )
        return value

    @field_validator("kubernetes_version")
    @classmethod
    def _minor_version(cls, value: str) -> str:
        if not _KUBERNETES_MINOR.fullmatch(value):
            raise ValueError(f"'{shown(value)}' is not a Kubernetes minor version; write it like 1.34")
        return value

    @field_validator("api_server")
    @classmethod
    def _server_url(cls, value: str | None) -> str | None:
        _raise_if(formats.api_server_url(value) if value is not None else None)
        return value

    @field_validator("kubeconfig_context", "kubeconfig")
    @classmethod
    def _plain_text(cls, value: str | None) -> str | None:
        if value is not None and _CONTROL.search(value):
            raise ValueError(f"'{shown(value)}' holds control characters")
        return value

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        _raise_if(formats.dns_label(value), "not a valid namespace name: ")
        if value in SYSTEM_NAMESPACES:
            raise ValueError(
                f"{value} is a namespace the cluster itself uses; colo declares its namespace (with Pod Security "
                "labels) and must not take that one over: choose a namespace of its own, e.g. colo"
            )
        return value

    @property
    def minor(self) -> int:
        return int(self.kubernetes_version.split(".")[1])


class DevicePlugin(_Model):
    """NVIDIA's device plugin on the GPU nodes: colo installs it where the node image has none, unless it
    is managed elsewhere (the GPU Operator, the cluster's own DaemonSet), when colo adds none."""

    managed_by: Literal["colo", "elsewhere"] = "colo"
    shared_replicas: Annotated[int, Field(ge=1, le=64)] | None = Field(
        default=None,
        description="time-slice with a plugin managed elsewhere: the replicas per GPU it advertises as "
        "nvidia.com/gpu.shared, as you have checked in its config",
    )
    shares_by: Literal["time-slicing", "mps"] = Field(
        default="time-slicing",
        description="How a plugin managed elsewhere shares each GPU among its sharedReplicas: its time-slicing, or "
        "its own MPS mode (sharing.mps: an equal share of threads and memory per replica)",
    )


NodePoolMode = Literal["managed", "existing", "karpenter", "auto"]
# The modes whose GPU nodes Karpenter launches from colo's NodePool: self-managed Karpenter, or EKS Auto Mode's.
KARPENTER_MODES = frozenset({"karpenter", "auto"})
# Which Karpenter settings each of those modes reads; the others would be silently ignored there.
_KARPENTER_KEYS = {
    "karpenter": {"node_role", "ami_version", "security_group_ids"},
    "auto": {"node_class"},
}


class Karpenter(_Model):
    """Where nodePool.mode karpenter or auto takes what the plan cannot know: the IAM role, AMI release and
    security groups of an EC2NodeClass, or the Auto Mode NodeClass to use (docs/capacity.md)."""

    node_role: Annotated[str, _checked(formats.iam_role_name)] | None = Field(
        default=None,
        description="karpenter: the nodes' IAM role by name (EC2NodeClass.spec.role); default "
        "KarpenterNodeRole-<cluster.name>, the name Karpenter's getting-started template gives it",
    )
    ami_version: Annotated[str, _checked(formats.ami_alias_version)] = Field(
        default="latest",
        description="karpenter: the release of the EKS AMI alias (al2023@<it>, bottlerocket@<it>); latest "
        "takes each new release, which Karpenter treats as drift",
    )
    security_group_ids: Annotated[
        list[Annotated[str, _checked(formats.security_group_id)]], Field(max_length=16)
    ] = Field(
        default_factory=list,
        description="karpenter: the nodes' security groups; default those tagged karpenter.sh/discovery: "
        "<cluster.name>",
    )
    node_class: DnsSubdomain = Field(
        default="default",
        description="auto: the EKS Auto Mode NodeClass the NodePool launches with: the built-in default, or "
        "one your platform declares (colo declares none)",
    )


class NodePool(_Model):
    mode: NodePoolMode = "existing"
    gpu: str = Field(
        default="L40S",
        min_length=1,
        max_length=128,
        description="The GPU, by any name nvidia-smi prints or its usual short form (L40S, NVIDIA H100 80GB "
        "HBM3, RTX 4090); for a GPU colo's catalog lacks, give gpuMemoryMiB (this name is then a label)",
    )
    gpu_memory_mib: GpuMemoryMiB | None = Field(
        default=None,
        alias="gpuMemoryMiB",
        description="The GPU's total memory as CUDA reports it, in MiB: torch.cuda.mem_get_info()[1] / 2**20, "
        "the device total vLLM prints (not nvidia-smi's memory.total, which is larger). For a GPU colo's "
        "catalog lacks; beside a catalog gpu it replaces the catalog's total",
    )
    gpu_compute_capability: GpuComputeCapability | None = Field(
        default=None,
        description="The GPU's CUDA compute capability as `nvidia-smi --query-gpu=compute_cap --format=csv` "
        "prints it (8.0, 8.9, 12.0): required with gpuMemoryMiB for a GPU colo's catalog lacks, since vLLM picks "
        "its kernels and weight layouts by it; beside a catalog gpu it must be the catalog's",
    )
    instance_type: Annotated[str, _checked(formats.instance_type_name)] = "g6e.xlarge"
    gpus_per_node: Annotated[int, Field(ge=1, le=16)] | None = Field(
        default=None, description="GPUs per node; default from the instance type"
    )
    spare_gpus: Annotated[int, Field(ge=0, le=4096)] = 0
    subnet_ids: Annotated[list[Annotated[str, _checked(formats.subnet_id)]], Field(max_length=32)] = Field(
        default_factory=list
    )
    node_selector: Annotated[dict[str, CliText], Field(max_length=32)] = Field(default_factory=dict)
    root_volume_gib: int | None = Field(default=None, ge=50, le=16_384, alias="rootVolumeGiB")
    max_nodes: Annotated[int, Field(ge=1, le=1000)] | None = None
    device_plugin: DevicePlugin = DevicePlugin()
    karpenter: Karpenter | None = Field(
        default=None, description="mode karpenter or auto: what the NodePool needs beyond the plan"
    )

    @field_validator("node_selector")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        _check_labels(value)
        return value

    @field_validator("subnet_ids")
    @classmethod
    def _distinct_subnets(cls, value: list[str]) -> list[str]:
        repeated = sorted({s for s in value if value.count(s) > 1})
        if repeated:
            raise ValueError(f"{', '.join(repeated)} listed more than once")
        return value

    @property
    def named_gpu(self) -> str | None:
        """The GPU name the user gave; None when only gpuMemoryMiB describes the GPU."""
        if self.gpu_memory_mib is not None and "gpu" not in self.model_fields_set:
            return None
        return self.gpu

    @model_validator(mode="after")
    def _managed_needs_subnets(self) -> NodePool:
        if self.mode == "managed" and not self.subnet_ids:
            raise ValueError("mode 'managed' needs subnetIds: the subnets the GPU nodes join")
        return self

    @model_validator(mode="after")
    def _karpenter_settings_for_their_mode(self) -> NodePool:
        if self.karpenter is None:
            return self
        if self.mode not in KARPENTER_MODES:
            raise ValueError(
                f"karpenter is read only with mode karpenter or auto, not {self.mode}; remove it"
            )
        ignored = sorted(self.karpenter.model_fields_set - _KARPENTER_KEYS[self.mode])
        if ignored:
            keys = ", ".join(f"karpenter.{to_camel(key)}" for key in ignored)
            raise ValueError(f"{keys}: not read with mode {self.mode}; remove it")
        return self


class Storage(_Model):
    storage_class: DnsSubdomain = "gp3"
    size: str = "500Gi"
    access_mode: Literal["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany"] = "ReadWriteOnce"
    # 1 MiB/s to 100 GiB/s: below, a startup budget runs into days; above, no volume or link delivers.
    read_throughput_mib_per_s: float = Field(default=250.0, ge=1, le=102_400, alias="readThroughputMiBps")
    hub_download_mib_per_s: float = Field(default=100.0, ge=1, le=102_400, alias="hubDownloadMiBps")
    sync_image: str | None = Field(
        default=None,
        description="Image that copies weightsUri into the volume: built from this repository's Dockerfile, "
        "pinned by tag or digest; required when a server sets weightsUri",
    )
    sync_service_account: DnsSubdomain | None = Field(
        default=None, description="Service account allowed to read the S3 prefixes (IRSA or Pod Identity)"
    )

    @field_validator("sync_image")
    @classmethod
    def _sync_image_pinned(cls, value: str | None) -> str | None:
        return require_pinned(value)

    @field_validator("size")
    @classmethod
    def _quantity(cls, value: str) -> str:
        _raise_if(formats.byte_quantity(value, "storage"))
        return value


class IngressSource(_Model):
    """Pods allowed to call the servers: those with `podLabels` (every pod when omitted) in `namespace`
    (the servers' own when omitted; "*" for every namespace)."""

    namespace: str | None = None
    pod_labels: Annotated[dict[str, CliText], Field(max_length=32)] | None = None

    @field_validator("pod_labels")
    @classmethod
    def _labels(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        _check_labels(value or {})
        return value

    @field_validator("namespace")
    @classmethod
    def _namespace_or_all(cls, value: str | None) -> str | None:
        problem = None if value is None or value == "*" else formats.dns_label(value)
        if problem:
            raise ValueError(f"not a namespace name, nor * for every one: {problem}")
        return value


class Network(_Model):
    """Who may reach the servers' ports: a NetworkPolicy per pair admits only these sources."""

    allow_from: Annotated[list[IngressSource], Field(max_length=64)] | None = Field(
        default=None, description="Sources allowed in; default: every pod of the servers' namespace"
    )
    scrape_from: Annotated[list[IngressSource], Field(max_length=64)] = Field(
        default_factory=list,
        description="Where Prometheus runs: admitted to the servers' ports (their /metrics is on the API port) "
        "and to the DCGM exporter's",
    )

    @field_validator("allow_from")
    @classmethod
    def _some_source(cls, value: list[IngressSource] | None) -> list[IngressSource] | None:
        if value is not None and not value:
            raise ValueError(
                "an empty list would admit no client at all; list the sources, or omit allowFrom for the "
                "servers' own namespace"
            )
        return value


class Budget(_Model):
    # Replaying the field report, the prediction of nvidia-smi "used" was low by up to 282 MiB; the default
    # margin covers that with room to spare.
    safety_margin_mib: int = Field(default=1024, ge=0, le=65_536, alias="safetyMarginMiB")
    embedding_max_model_len: Annotated[int, Field(ge=16, le=10_000_000)] = 8192
    embedding_max_num_seqs: Annotated[int, Field(ge=1, le=65_536)] = 64
    embedding_concurrency: Annotated[float, Field(gt=0, le=65_536)] = 2.0
    llm_min_concurrency: Annotated[float, Field(gt=0, le=65_536)] = 1.0
    kv_cache_sizing: Literal["measured", "pinned"] = Field(
        default="measured",
        description="From vLLM 0.34, how each KV pool is sized: `measured` lets vLLM size it after warm-up "
        "(adapts to what the process really holds and never exceeds its request; the first boot of a new "
        "configuration, with an empty compile cache, can get less), `pinned` passes the size colo plans as "
        "--kv-cache-memory-bytes (the same pool on every boot, but nothing shrinks it if the process holds more "
        "than planned). Releases before 0.34 size from the profile either way.",
    )
    calibration: str | None = Field(
        default=None,
        description="A calibration file written by `colo verify --record`: the plan uses its observed "
        "per-process constants for the GPU and vLLM release it was recorded on",
    )


class Observability(_Model):
    """How the servers are watched once they run: scraping, GPU metrics, a dashboard and alerts."""

    prometheus_operator: bool = Field(
        default=False,
        description="The cluster runs the Prometheus operator: a PodMonitor scrapes the servers and a "
        "PrometheusRule holds the alerts; otherwise the pods carry prometheus.io scrape annotations",
    )
    monitor_labels: dict[str, CliText] = Field(
        default_factory=dict,
        description="Labels on the PodMonitor and PrometheusRule, for the operator's selectors "
        "(e.g. release: kube-prometheus-stack)",
    )
    dcgm_exporter: bool = Field(
        default=False,
        description="Deploy NVIDIA's DCGM exporter on colo's GPU nodes (only where colo installs the device "
        "plugin; the GPU operator brings its own)",
    )
    grafana_dashboard: bool = Field(default=True, description="A dashboard ConfigMap for Grafana's sidecar")
    dashboard_namespace: str | None = Field(
        default=None, description="Where the dashboard ConfigMap goes; default: the servers' namespace"
    )

    @field_validator("dashboard_namespace")
    @classmethod
    def _namespace(cls, value: str | None) -> str | None:
        _raise_if(formats.dns_label(value) if value is not None else None, "not a valid namespace name: ")
        return value

    @field_validator("monitor_labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        _check_labels(value)
        return value


class StackConfig(_Model):
    cluster: Cluster = Cluster()
    node_pool: NodePool = NodePool()
    storage: Storage = Storage()
    budget: Budget = Budget()
    network: Network = Network()
    observability: Observability = Observability()
    pairs: Annotated[list[Pair], Field(max_length=1000)]
    hf_token_set: bool = Field(default=False, description="True when the secret colo:hfToken is present")
    hub_token: SecretStr | None = Field(
        default=None,
        exclude=True,
        repr=False,
        description="colo:hfToken's value where the Pulumi engine hands it over, for reading gated models from the "
        "Hub at plan time (HF_TOKEN otherwise); never written anywhere",
    )
    vllm_api_key_set: bool = Field(
        default=False, description="True when the secret colo:vllmApiKey is present"
    )
    aws_region: str | None = Field(
        default=None, description="The stack's aws:region (outside the colo namespace), when it is set"
    )
    aws_profile: str | None = Field(
        default=None,
        description="The stack's aws:profile (outside the colo namespace), when it is set: the credentials "
        "colo's own AWS calls use, as the AWS provider does",
    )
    project_dir: Path | None = Field(
        default=None,
        description="Where relative profile paths are read from: the project directory; None: the working "
        "directory, which is the project directory when the Pulumi CLI runs the program",
    )

    @model_validator(mode="after")
    def _managed_pool_names_its_cluster(self) -> StackConfig:
        # The default name would send the node group to whichever EKS cluster happens to be called colo.
        mode = self.node_pool.mode
        if mode in {"managed", *KARPENTER_MODES} and "name" not in self.cluster.model_fields_set:
            joins = (
                "the node group joins" if mode == "managed" else "its nodes join (Karpenter finds them by it)"
            )
            raise ValidationError.from_exception_data(
                type(self).__name__,
                [
                    _error(
                        ("cluster", "name"),
                        f"required with nodePool.mode: {mode}: the name of the EKS cluster {joins} "
                        "(pulumi config set --path cluster.name <cluster>)",
                    )
                ],
            )
        return self

    @model_validator(mode="after")
    def _storage_for_s3_weights(self) -> StackConfig:
        synced = sorted({p.name for p in self.pairs for _, s in p.servers() if s.weights_uri})
        if not synced:
            return self
        names = ", ".join(synced)
        # Raised with the storage key's own location, so the message names the key to set.
        errors: list[InitErrorDetails] = []
        if self.storage.sync_image is None:
            errors.append(
                _error(
                    ("storage", "syncImage"),
                    f"pairs {names} copy weights from S3 (weightsUri), which needs storage.syncImage: an "
                    "image built from this repository's Dockerfile, pinned by tag",
                )
            )
        if self.storage.access_mode == "ReadOnlyMany":
            errors.append(
                _error(
                    ("storage", "accessMode"),
                    f"pairs {names} copy weights from S3 (weightsUri) into the model volume, which "
                    "ReadOnlyMany cannot write; use ReadWriteOnce or ReadWriteMany",
                    self.storage.access_mode,
                )
            )
        if errors:
            raise ValidationError.from_exception_data(type(self).__name__, errors)
        return self

    @field_validator("pairs")
    @classmethod
    def _unique_names(cls, value: list[Pair]) -> list[Pair]:
        if not value:
            raise ValueError("give at least one pair")
        seen: set[str] = set()
        for pair in value:
            if pair.name in seen:
                raise ValueError(f"pair name '{pair.name}' is used twice; names must be unique")
            seen.add(pair.name)
        return value
