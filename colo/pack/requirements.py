"""What `colo pack` is asked for: the servers with their minimums, the region and the instance families.

Two sources give the same `PackRequest`: a models file (`--models FILE`, the `PackFile` schema below) and an
existing stack (`--stack S` / `--config FILE`), whose pairs stay as they are and whose budget gives the
minimums. Servers are kept as the stack-file values they will be written as, so what pack plans and what it
writes are the same text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from colo.config.schema import (
    Budget,
    Cluster,
    MaxModelLen,
    NodePool,
    Pair,
    ServerSpec,
    StackConfig,
    Storage,
    VllmImage,
)
from colo.errors import ModelsFileError, Problem
from colo.roles import Role

DEFAULT_REGION = "us-east-1"
# Keys pack decides; a models file may not set them, and a stack's values for them are what pack replaces.
PACK_NODE_POOL_KEYS = frozenset(
    {"gpu", "gpuMemoryMiB", "gpuComputeCapability", "instanceType", "gpusPerNode", "spareGpus"}
)
PACK_BUDGET_KEYS = frozenset({"embeddingConcurrency", "llmMinConcurrency"})
# A fixed share of one GPU's memory means nothing on another GPU: pack derives them, as colo plan does.
MEMORY_OVERRIDES = ("gpuMemoryUtilization", "kvCacheMemoryBytes")
MinConcurrency = Annotated[float, Field(gt=0)]


@dataclass(frozen=True)
class LlmNeed:
    name: str  # the pair's name in the written stack
    server: dict[str, Any]  # its `llm` values as a stack file writes them
    min_concurrency: float  # concurrent requests of maxModelLen its KV cache must hold
    min_kv_tokens: int | None  # "GPU KV cache size" it must reach
    embedding: str | None  # the key of the embedding server it must run beside; None: pack chooses
    reranker: str | None  # likewise for a reranker; None: pack chooses one or none
    source: str  # where it was asked for, for messages


@dataclass(frozen=True)
class CompanionNeed:
    """An embedding or reranker server: every listed embedding runs beside at least one LLM; a reranker
    beside exactly `replicas` of them."""

    key: str
    server: dict[str, Any]
    min_concurrency: float
    replicas: int | None  # None: at least one (embeddings)
    source: str


@dataclass(frozen=True)
class PackRequest:
    region: str
    families: tuple[str, ...] | None  # None: every family with a price in the region
    spare_gpus: int
    llms: tuple[LlmNeed, ...]
    embeddings: tuple[CompanionNeed, ...]
    rerankers: tuple[CompanionNeed, ...]
    base: dict[str, Any]  # cluster, nodePool (without PACK_NODE_POOL_KEYS), storage, budget: copied as given
    origin: str
    current_instance: str | None = None  # the stack's own instance type, when read from a stack
    notes: tuple[str, ...] = ()  # what pack changed in what it was given

    def stack_budget(self) -> dict[str, Any]:
        """The budget the written stack carries: every pooling server sized for the largest companion minimum,
        and the smallest LLM minimum as the plan's own floor (pack checks each LLM's own minimum)."""
        companions = [*self.embeddings, *self.rerankers]
        return {
            **self.base.get("budget", {}),
            "embeddingConcurrency": max(c.min_concurrency for c in companions),
            "llmMinConcurrency": min(llm.min_concurrency for llm in self.llms),
        }

    def planning_base(self, *, written: bool = False) -> dict[str, Any]:
        """What every evaluation shares with the written stack: cluster, storage and the budget.

        Packings are judged with the plan's floor at one request (vLLM's own), so that a refusal for a high
        minimum reads as that LLM's minimum rather than as a budget key; the written stack carries the
        smallest LLM minimum, which leaves every graph decision unchanged, since each LLM meets it."""
        base: dict[str, Any] = {key: self.base[key] for key in ("cluster", "storage") if key in self.base}
        budget = self.stack_budget()
        if not written:
            budget["llmMinConcurrency"] = min(1.0, budget["llmMinConcurrency"])
        return {**base, "budget": budget}


class _PackModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


def _no_memory_overrides(server: ServerSpec) -> None:
    for key in MEMORY_OVERRIDES:
        if key in {to_camel(f) for f in server.model_fields_set}:
            raise ValueError(f"{key} is derived for the GPU pack chooses; drop it")


class LlmEntry(ServerSpec):
    """An LLM: a stack file's server keys, with maxModelLen and the vLLM release required, and its minimums."""

    name: str | None = Field(default=None, description="The pair's name; default: from the model id")
    max_model_len: MaxModelLen
    vllm: VllmImage
    min_concurrency: MinConcurrency = 1.0
    min_kv_tokens: Annotated[int, Field(ge=1)] | None = None
    embedding: str | None = Field(default=None, description="The model of the embedding it must run beside")
    reranker: str | None = Field(default=None, description="The model of the reranker it must run beside")

    @model_validator(mode="after")
    def _derived_memory(self) -> LlmEntry:
        _no_memory_overrides(self)
        if self.group_gpu is not None:
            raise ValueError("groupGpu places a companion; pack spreads the companions over the LLM's group")
        return self


class EmbeddingEntry(ServerSpec):
    """An embedding server: a stack file's server keys and the concurrency its KV cache must hold."""

    vllm: VllmImage
    min_concurrency: MinConcurrency = 2.0

    @model_validator(mode="after")
    def _derived_memory(self) -> EmbeddingEntry:
        _no_memory_overrides(self)
        for key in ("tensorParallelSize", "groupGpu"):
            if key in {to_camel(f) for f in self.model_fields_set}:
                raise ValueError(
                    f"{key}: a companion runs on one GPU, and pack places it on the GPUs of the LLM it runs beside"
                )
        return self


class RerankerEntry(EmbeddingEntry):
    replicas: Annotated[int, Field(ge=1)] = 1


class StackBase(_PackModel):
    """Stack settings copied into the written stack; pack sets the GPU, instance type and minimums."""

    cluster: Cluster = Cluster()
    node_pool: dict[str, Any] = Field(default_factory=dict)
    storage: Storage = Storage()
    budget: dict[str, Any] = Field(default_factory=dict)

    @field_validator("node_pool")
    @classmethod
    def _node_pool(cls, value: dict[str, Any]) -> dict[str, Any]:
        chosen = sorted(PACK_NODE_POOL_KEYS & set(value))
        if chosen:
            raise ValueError(f"{', '.join(chosen)}: pack chooses these")
        NodePool.model_validate(value)
        return value

    @field_validator("budget")
    @classmethod
    def _budget(cls, value: dict[str, Any]) -> dict[str, Any]:
        chosen = sorted(PACK_BUDGET_KEYS & set(value))
        if chosen:
            raise ValueError(f"{', '.join(chosen)}: give minConcurrency on the servers instead")
        Budget.model_validate(value)
        return value


class PackFile(_PackModel):
    region: str = DEFAULT_REGION
    instance_families: list[str] | None = Field(default=None, min_length=1)
    spare_gpus: Annotated[int, Field(ge=0)] = 0
    llms: list[LlmEntry] = Field(min_length=1)
    embeddings: list[EmbeddingEntry] = Field(min_length=1)
    rerankers: list[RerankerEntry] = Field(default_factory=list)
    stack: StackBase = StackBase()

    @model_validator(mode="after")
    def _pins_name_listed_models(self) -> PackFile:
        for kind, pool in ((Role.EMBEDDING, self.embeddings), (Role.RERANKER, self.rerankers)):
            models = [s.model for s in pool]
            twice = sorted({m for m in models if models.count(m) > 1})
            if twice:
                raise ValueError(f"{kind} {', '.join(twice)} is listed twice; list each model once")
            for llm in self.llms:
                pinned = getattr(llm, kind)
                if pinned is not None and pinned not in models:
                    raise ValueError(f"{llm.model} asks for {kind} {pinned}, which {kind}s does not list")
        return self

    @model_validator(mode="after")
    def _replicas_possible(self) -> PackFile:
        for reranker in self.rerankers:
            pins = sum(1 for llm in self.llms if llm.reranker == reranker.model)
            if pins > reranker.replicas:
                raise ValueError(
                    f"{pins} LLMs ask for reranker {reranker.model}, more than its replicas ({reranker.replicas})"
                )
            if reranker.replicas > len(self.llms):
                raise ValueError(
                    f"reranker {reranker.model} asks for {reranker.replicas} replicas, one per LLM at most"
                )
        return self


_PACK_ONLY = {"name", "min_concurrency", "min_kv_tokens", Role.EMBEDDING, Role.RERANKER, "replicas"}


def _server_values(entry: ServerSpec) -> dict[str, Any]:
    """The entry's stack-file keys, as the user wrote them (defaults stay implicit)."""
    fields = entry.model_fields_set - _PACK_ONLY
    values: dict[str, Any] = entry.model_dump(by_alias=True, include=fields, mode="json", exclude_unset=True)
    return values


def _pair_name(model: str, taken: set[str]) -> str:
    """A DNS label from the model id's last part: Qwen/Qwen3.6-27B-FP8 -> qwen3-6-27b-fp8."""
    stem = re.sub(r"[^a-z0-9]+", "-", model.rsplit("/", 1)[-1].lower()).strip("-")
    stem = ("m-" + stem if not stem[:1].isalpha() else stem)[:36].rstrip("-")
    name, suffix = stem, 2
    while name in taken:
        name, suffix = f"{stem}-{suffix}", suffix + 1
    taken.add(name)
    return name


def _location(source: str, loc: Sequence[int | str]) -> str:
    text = source
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{to_camel(str(part))}"
    return text


def _invalid(source: str, exc: ValidationError) -> ModelsFileError:
    problems = [
        Problem(
            _location(source + ":", err["loc"]) if err["loc"] else source,
            str(err["msg"]).removeprefix("Value error, "),
        )
        for err in exc.errors()
    ]
    return ModelsFileError(problems)


def _companions(entries: Sequence[EmbeddingEntry], kind: str) -> tuple[CompanionNeed, ...]:
    return tuple(
        CompanionNeed(
            key=e.model,
            server=_server_values(e),
            min_concurrency=e.min_concurrency,
            replicas=e.replicas if isinstance(e, RerankerEntry) else None,
            source=f"{kind}[{i}]",
        )
        for i, e in enumerate(entries)
    )


def request_from_file(file: PackFile, origin: str) -> PackRequest:
    taken = {llm.name for llm in file.llms if llm.name}
    llms = tuple(
        LlmNeed(
            name=llm.name or _pair_name(llm.model, taken),
            server=_server_values(llm),
            min_concurrency=llm.min_concurrency,
            min_kv_tokens=llm.min_kv_tokens,
            embedding=llm.embedding,
            reranker=llm.reranker,
            source=f"llms[{i}]",
        )
        for i, llm in enumerate(file.llms)
    )
    stack = file.stack
    base: dict[str, Any] = {
        "cluster": stack.cluster.model_dump(by_alias=True, mode="json", exclude_unset=True),
        "nodePool": dict(stack.node_pool),
        "storage": stack.storage.model_dump(by_alias=True, mode="json", exclude_unset=True),
        "budget": dict(stack.budget),
    }
    request = PackRequest(
        region=file.region,
        families=tuple(file.instance_families) if file.instance_families else None,
        spare_gpus=file.spare_gpus,
        llms=llms,
        embeddings=_companions(file.embeddings, "embeddings"),
        rerankers=_companions(file.rerankers, "rerankers"),
        base=base,
        origin=origin,
    )
    _check_pair_names(request)
    return request


def _check_pair_names(request: PackRequest) -> None:
    """Names become Kubernetes object names: the stack schema's own pair check says what it refuses."""
    problems = []
    embedding = request.embeddings[0].server
    for llm in request.llms:
        try:
            Pair.model_validate(
                {"name": llm.name, Role.LLM.value: llm.server, Role.EMBEDDING.value: embedding}
            )
        except ValidationError as exc:
            problems += [
                Problem(f"{llm.source}.name", str(e["msg"])) for e in exc.errors() if e["loc"] == ("name",)
            ]
    if problems:
        raise ModelsFileError(problems)


def load_pack_file(path: Path) -> PackRequest:
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ModelsFileError([Problem(str(path), "file not found")]) from None
    except yaml.YAMLError as exc:
        raise ModelsFileError([Problem(str(path), f"not valid YAML: {exc}")]) from None
    if not isinstance(raw, Mapping):
        raise ModelsFileError([Problem(str(path), "must be a YAML mapping")])
    try:
        file = PackFile.model_validate(raw)
    except ValidationError as exc:
        raise _invalid(str(path), exc) from None
    return request_from_file(file, str(path))


def _stack_server(server: ServerSpec, path: str, notes: list[str]) -> dict[str, Any]:
    values: dict[str, Any] = server.model_dump(by_alias=True, mode="json", exclude_unset=True)
    for key in MEMORY_OVERRIDES:
        if values.pop(key, None) is not None:
            notes.append(f"{path}.{key} was set for the stack's GPU; pack derives it for the GPU it chooses")
    return values


def _known_instance_type(config: StackConfig) -> str | None:
    """The stack's instance type when it names one or colo manages its nodes (not the schema's default)."""
    pool = config.node_pool
    return pool.instance_type if pool.mode == "managed" or "instance_type" in pool.model_fields_set else None


def request_from_stack(config: StackConfig, origin: str) -> PackRequest:
    """The stack's pairs as they are (each LLM keeps its own embedding and reranker), its budget's minimums,
    its region and spare GPUs; memory overrides are dropped, since they were set for the stack's GPU."""
    budget = config.budget
    llms, embeddings, rerankers = [], [], []
    notes: list[str] = []
    for index, pair in enumerate(config.pairs):
        path = f"colo:pairs[{index}]"
        reranker_key = f"{pair.name}.reranker" if pair.reranker else None
        llms.append(
            LlmNeed(
                pair.name,
                _stack_server(pair.llm, f"{path}.llm", notes),
                budget.llm_min_concurrency,
                None,
                f"{pair.name}.embedding",
                reranker_key,
                f"{path}.llm",
            )
        )
        embeddings.append(
            CompanionNeed(
                f"{pair.name}.embedding",
                _stack_server(pair.embedding, f"{path}.embedding", notes),
                budget.embedding_concurrency,
                None,
                f"{path}.embedding",
            )
        )
        if pair.reranker is not None and reranker_key is not None:
            rerankers.append(
                CompanionNeed(
                    reranker_key,
                    _stack_server(pair.reranker, f"{path}.reranker", notes),
                    budget.embedding_concurrency,
                    1,
                    f"{path}.reranker",
                )
            )
    node_pool = config.node_pool.model_dump(by_alias=True, mode="json", exclude_unset=True)
    budget_values = budget.model_dump(by_alias=True, mode="json", exclude_unset=True)
    base = {
        "cluster": config.cluster.model_dump(by_alias=True, mode="json", exclude_unset=True),
        "nodePool": {k: v for k, v in node_pool.items() if k not in PACK_NODE_POOL_KEYS},
        "storage": config.storage.model_dump(by_alias=True, mode="json", exclude_unset=True),
        "budget": {k: v for k, v in budget_values.items() if k not in PACK_BUDGET_KEYS},
    }
    return PackRequest(
        region=config.aws_region or DEFAULT_REGION,
        families=None,
        spare_gpus=config.node_pool.spare_gpus,
        llms=tuple(llms),
        embeddings=tuple(embeddings),
        rerankers=tuple(rerankers),
        base=base,
        origin=origin,
        current_instance=_known_instance_type(config),
        notes=tuple(notes),
    )
