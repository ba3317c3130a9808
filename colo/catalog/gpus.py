"""GPUs: colo's catalog (gpus.yaml), found by any name a user writes, or described by memory alone.

One lookup serves the stack file, `colo estimate`, the instance-type catalog and the bench. A name is
normalised (case, separators, vendor words, "80 GB" -> "80gb") and must equal one explicit alias of one GPU;
a name that only part-matches is refused with the GPUs it could mean, so "A100" never silently becomes the
40 GB or the 80 GB card.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any, Literal

from colo.catalog.data import parse_yaml
from colo.catalog.units import GIB, MIB
from colo.suggest import close_match

Segment = Literal["datacenter", "workstation"]
# Words that vendors put in front of a name and users leave out ("NVIDIA GeForce RTX 4090" = "RTX 4090").
_VENDOR_WORDS = frozenset({"nvidia", "geforce", "tesla"})
_SIZE = re.compile(r"^\d+$")
_SIZE_G = re.compile(r"^\d+g$")
_CAPABILITY = re.compile(r"^(\d{1,2})\.(\d)$")


class GpuLookupError(KeyError):
    """A GPU name that names no catalog GPU, or more than one; args[0] is the message for the user."""

    def __init__(self, message: str, candidates: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.candidates = candidates


@dataclass(frozen=True)
class GpuSpec:
    name: str
    cuda_total_bytes: int  # torch.cuda.mem_get_info() total: what vLLM prints as the device total
    context_bytes: int
    cublas_bytes: int
    nvidia_smi_total_mib: int | None = None
    ec2_memory_mib: int | None = None
    sources: Mapping[str, str] = field(default_factory=dict)
    # CUDA compute capability (major, minor): vLLM picks kernels and quantized layouts by it (Marlin below
    # 8.9 for FP8, FlashMLA on 9.x, V1's minimum of 8.0 before 0.10.2).
    compute_capability: tuple[int, int] = (0, 0)
    # Streaming multiprocessors: the Triton top-k/top-p sampler sizes a scratch buffer by it.
    sm_count: int = 0
    device_name: str = ""  # as torch.cuda.get_device_name and nvidia-smi print it; vLLM matches on it
    from_catalog: bool = True  # False: a GPU the catalog lacks, described by its memory alone
    # Figures colo had to assume (a GPU given by its memory, or a total given by the user), said in output.
    assumptions: tuple[str, ...] = ()

    @property
    def cuda_total_gib(self) -> float:
        return self.cuda_total_bytes / GIB

    @property
    def cuda_total_mib(self) -> float:
        return self.cuda_total_bytes / MIB


def normalise(name: str) -> frozenset[str]:
    """The words of a GPU name, as the lookup compares them."""
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w and w not in _VENDOR_WORDS]
    joined: list[str] = []
    for word in words:
        if word in ("gb", "g") and joined and _SIZE.match(joined[-1]):
            joined[-1] += "gb"  # "80 GB" and "80GB" are one word
        elif _SIZE_G.match(word):
            joined.append(word + "b")  # "40G" is "40GB"
        else:
            joined.append(word)
    return frozenset(joined)


@dataclass(frozen=True)
class _Entry:
    spec: GpuSpec
    segment: Segment
    aliases: tuple[str, ...]
    measured_context: bool
    device_name_alias: bool  # False: the device name's words name another card too (found only in full)


@dataclass(frozen=True)
class _Catalog:
    gpus: dict[str, GpuSpec]
    aliases: dict[frozenset[str], str]  # normalised alias -> GPU name
    device_names: dict[str, str]  # nvidia-smi's name, written in full (see _spelled) -> GPU name
    alias_text: dict[str, tuple[str, ...]]  # GPU name -> its aliases as written in gpus.yaml
    largest_context: GpuSpec  # the GPU with the largest measured context (unknown GPUs take its figure)
    largest_sm: GpuSpec


def _capability(text: str) -> tuple[int, int]:
    major, minor = str(text).split(".")
    return int(major), int(minor)


def _measured_total(entry: Mapping[str, Any]) -> int | None:
    # vLLM prints round(bytes / 2**30, 2); a MiB figure, where known, is more precise and wins. nvidia-smi -q's
    # FB total less its Reserved line is the same figure (NVML nvmlMemory_v2_t.reserved: memory "reserved for
    # system use (driver or firmware)", outside what CUDA hands out).
    if "cuda_total_mib" in entry:
        return int(entry["cuda_total_mib"]) * MIB
    if "cuda_total_gib" in entry:
        return round(float(entry["cuda_total_gib"]) * GIB)
    if "reserved_mib" in entry:
        return (int(entry["nvidia_smi_total_mib"]) - int(entry["reserved_mib"])) * MIB
    return None


def _largest_gap(raw: Mapping[str, Mapping[str, Any]]) -> tuple[int, str]:
    """nvidia-smi's memory.total minus the CUDA total, largest over the GPUs where both are known."""
    gaps = [
        (int(e["nvidia_smi_total_mib"]) * MIB - total, name)
        for name, e in raw.items()
        if (total := _measured_total(e)) is not None and e.get("nvidia_smi_total_mib")
    ]
    return max(gaps)


def _cuda_total(name: str, entry: Mapping[str, Any], gap: tuple[int, str]) -> tuple[int, str | None]:
    """The measured CUDA total, or one derived from nvidia-smi's total by the largest known gap."""
    measured = _measured_total(entry)
    if measured is not None:
        return measured, None
    smi = entry.get("nvidia_smi_total_mib")
    if not smi:
        raise ValueError(
            f"gpus.yaml: {name} has neither a CUDA total nor nvidia-smi's total to derive it from"
        )
    gap_bytes, gap_gpu = gap
    derived = (
        f"derived: nvidia-smi memory.total {smi} MiB minus {gap_bytes // MIB} MiB, the largest gap between "
        f"nvidia-smi's and CUDA's totals on any catalog GPU with both measured ({gap_gpu}); a lower total "
        f"keeps the predicted KV pool from exceeding the real one"
    )
    return int(smi) * MIB - gap_bytes, derived


def _entry(name: str, raw: Mapping[str, Any], gap: tuple[int, str], cublas: int) -> _Entry:
    total, derived = _cuda_total(name, raw, gap)
    sources = dict(raw.get("sources") or {})
    if derived:
        sources["cuda_total"] = f"{sources['cuda_total']}; {derived}" if "cuda_total" in sources else derived
    spec = GpuSpec(
        name=name,
        device_name=str(raw["device_name"]),
        cuda_total_bytes=total,
        context_bytes=int(raw.get("context_mib", 0)) * MIB,
        cublas_bytes=int(raw.get("cublas_mib", cublas // MIB)) * MIB,
        nvidia_smi_total_mib=raw.get("nvidia_smi_total_mib"),
        ec2_memory_mib=raw.get("ec2_memory_mib"),
        sources=sources,
        compute_capability=_capability(raw["compute_capability"]),
        sm_count=int(raw["sm_count"]),
    )
    # A device name two cards share (the RTX 4060 Ti's 8 and 16 GB) is an alias of the one that states it.
    named = (str(raw["device_name"]),) if raw.get("device_name_alias", True) else ()
    aliases = (name, *named, *(str(a) for a in raw.get("aliases") or ()))
    return _Entry(
        spec, raw["segment"], aliases, "context_mib" in raw, bool(raw.get("device_name_alias", True))
    )


def _spelled(name: str) -> str:
    """A name as written, only its case and runs of spaces set aside: how a device name is matched in full."""
    return " ".join(name.lower().split())


def _device_names(entries: Mapping[str, _Entry]) -> dict[str, str]:
    """nvidia-smi's name of each GPU, in full. Where two cards print one name (the RTX 4060 Ti's 8 and 16 GB), it
    finds the one whose entry claims it; a name only one card prints finds that card even where its words alone
    name others too ("NVIDIA H20", while the bare "H20" names both H20s)."""
    found: dict[str, str] = {}
    for name, entry in entries.items():
        key = _spelled(entry.spec.device_name)
        if key not in found or entry.device_name_alias:
            found[key] = name
    return found


def _with_class_context(entries: dict[str, _Entry]) -> dict[str, GpuSpec]:
    """A GPU without a measured context takes the largest measured in its segment (data centre or
    workstation): contexts grow with the driver and the SM count, so the largest is the safe side."""
    largest: dict[str, _Entry] = {}
    for entry in entries.values():
        best = largest.get(entry.segment)
        if entry.measured_context and (best is None or entry.spec.context_bytes > best.spec.context_bytes):
            largest[entry.segment] = entry
    table: dict[str, GpuSpec] = {}
    for name, entry in entries.items():
        spec = entry.spec
        if not entry.measured_context:
            donor = largest[entry.segment].spec
            spec = replace(
                spec,
                context_bytes=donor.context_bytes,
                sources={
                    **spec.sources,
                    "context": f"not measured on this GPU: the largest context measured on a {entry.segment} "
                    f"GPU of the catalog ({donor.name}, {donor.context_bytes // MIB} MiB)",
                },
            )
        table[name] = spec
    return table


def parse_catalog(data: Mapping[str, Any]) -> _Catalog:
    raw: dict[str, Mapping[str, Any]] = dict(data["gpus"])
    gap = _largest_gap(raw)
    cublas = int(data["default_cublas_mib"]) * MIB
    entries = {name: _entry(name, e, gap, cublas) for name, e in raw.items()}
    aliases: dict[frozenset[str], str] = {}
    for name, entry in entries.items():
        for alias in entry.aliases:
            key = normalise(alias)
            if aliases.get(key, name) != name:
                raise ValueError(f"gpus.yaml: alias '{alias}' of {name} also names {aliases[key]}")
            aliases[key] = name
    measured = [entry.spec for entry in entries.values() if entry.measured_context]
    return _Catalog(
        gpus=_with_class_context(entries),
        aliases=aliases,
        device_names=_device_names(entries),
        alias_text={name: entry.aliases for name, entry in entries.items()},
        largest_context=max(measured, key=lambda g: g.context_bytes),
        largest_sm=max((entry.spec for entry in entries.values()), key=lambda g: g.sm_count),
    )


@cache
def _catalog() -> _Catalog:
    text = resources.files("colo.catalog").joinpath("gpus.yaml").read_text()
    return parse_catalog(parse_yaml(text))


def gpu_names() -> list[str]:
    return sorted(_catalog().gpus)


def gpu_aliases(name: str) -> tuple[str, ...]:
    """Every name gpus.yaml lists for one catalog GPU (its own name and nvidia-smi's first)."""
    return _catalog().alias_text[name]


def gpu_candidates(name: str) -> tuple[str, ...]:
    """The catalog GPUs a name may mean: the one whose nvidia-smi name it is, written in full, or the one it is an
    alias of, else every GPU one of whose aliases holds all its words ("A100" -> both A100s), else none."""
    catalog = _catalog()
    if _spelled(name) in catalog.device_names:
        return (catalog.device_names[_spelled(name)],)
    words = normalise(name)
    if words in catalog.aliases:
        return (catalog.aliases[words],)
    if not words:
        return ()
    return tuple(sorted({gpu for alias, gpu in catalog.aliases.items() if words <= alias}))


def _describe(name: str) -> str:
    spec = _catalog().gpus[name]
    return f"{name} ({spec.device_name}, {round(spec.cuda_total_gib, 2)} GiB)"


def gpu(name: str) -> GpuSpec:
    """The catalog GPU `name` is an alias of; refuses a name that fits several GPUs, or none."""
    catalog = _catalog()
    candidates = gpu_candidates(name)
    named = normalise(name) in catalog.aliases or _spelled(name) in catalog.device_names
    if len(candidates) == 1 and named:
        return catalog.gpus[candidates[0]]
    if len(candidates) == 1:
        raise GpuLookupError(
            f"GPU '{name}' is not one of the names colo knows; did you mean {_describe(candidates[0])}?",
            candidates,
        )
    if candidates:
        listed = "; ".join(_describe(c) for c in candidates)
        raise GpuLookupError(f"GPU '{name}' could be any of: {listed}; name the one you have", candidates)
    spellings = {alias: gpu for gpu, aliases in catalog.alias_text.items() for alias in (gpu, *aliases)}
    closest = close_match(name, spellings)
    guess = f"did you mean {_describe(spellings[closest])}? " if closest is not None else ""
    raise GpuLookupError(
        f"unknown GPU '{name}'; {guess}colo's catalog has {', '.join(gpu_names())} (nvidia-smi's names and "
        f"the usual short forms work too); for another GPU give its memory and compute capability instead"
    )


def parse_capability(text: str) -> tuple[int, int]:
    """A compute capability written as nvidia-smi's `compute_cap` prints it ("8.9", "12.0")."""
    match = _CAPABILITY.match(text.strip())
    if match is None:
        raise GpuLookupError(
            f"compute capability '{text}' is not major.minor as `nvidia-smi --query-gpu=compute_cap "
            f"--format=csv` prints it (8.0, 8.9, 9.0, 12.0)"
        )
    return int(match.group(1)), int(match.group(2))


def _capability_text(capability: tuple[int, int]) -> str:
    return f"{capability[0]}.{capability[1]}"


def gpu_by_memory(
    cuda_total_mib: int, compute_capability: tuple[int, int], label: str | None = None
) -> GpuSpec:
    """A GPU the catalog lacks, known by the total CUDA reports (what vLLM prints as the device total) and its
    compute capability, which picks vLLM's kernels, weight layouts (FP8 through Marlin below 8.9), CUDA-graph
    sizes and whether V1 runs at all, so it is never guessed.

    What neither figure tells is taken on the safe side, and said: the largest per-process context and SM
    count in the catalog (the context is outside every vLLM budget; the SM count sizes the sampler's scratch).
    """
    catalog = _catalog()
    context, sms = catalog.largest_context, catalog.largest_sm
    return GpuSpec(
        name=label or f"GPU with {cuda_total_mib} MiB",
        cuda_total_bytes=cuda_total_mib * MIB,
        context_bytes=context.context_bytes,
        cublas_bytes=context.cublas_bytes,
        sources={
            "cuda_total": "given by the user (the total CUDA reports, as vLLM prints it)",
            "compute_capability": "given by the user",
        },
        compute_capability=compute_capability,
        sm_count=sms.sm_count,
        from_catalog=False,
        assumptions=(
            f"GPU not in colo's catalog: CUDA total {cuda_total_mib} MiB and compute capability "
            f"{_capability_text(compute_capability)} as given; per-process context taken as the largest in the "
            f"catalog ({context.context_bytes // MIB} MiB, {context.name}), SM count as the largest "
            f"({sms.sm_count}, {sms.name})",
        ),
    )


def _capability_needed(cuda_total_mib: int, label: str | None) -> GpuLookupError:
    named = f"'{label}' is not in colo's catalog" if label else "a GPU given by its memory alone"
    return GpuLookupError(
        f"{named}: give its compute capability too (nodePool.gpuComputeCapability, colo estimate "
        f"--gpu-compute-capability; `nvidia-smi --query-gpu=compute_cap --format=csv` prints it). vLLM picks its "
        f"kernels, FP8 and other weight layouts and CUDA-graph sizes by it, so colo does not guess it for the "
        f"{cuda_total_mib} MiB given"
    )


def _with_total(known: GpuSpec, cuda_total_mib: int) -> GpuSpec:
    catalog_mib = round(known.cuda_total_mib)
    if catalog_mib == cuda_total_mib:
        return known
    return replace(
        known,
        cuda_total_bytes=cuda_total_mib * MIB,
        assumptions=(
            f"CUDA total {cuda_total_mib} MiB as given, instead of the catalog's {catalog_mib} MiB",
        ),
    )


def resolve_gpu(
    name: str | None, cuda_total_mib: int | None, compute_capability: str | None = None
) -> GpuSpec:
    """The GPU a stack or `colo estimate` describes: a catalog name, or the memory and compute capability of
    a GPU the catalog lacks (an unknown name is then its label). Beside a catalog name, a memory size replaces
    the catalog's total (another driver), and a compute capability must be the catalog's."""
    capability = parse_capability(compute_capability) if compute_capability is not None else None
    if name is None and cuda_total_mib is None:
        raise GpuLookupError("name a GPU, or give its memory and compute capability")
    try:
        known = gpu(name) if name is not None else None
    except GpuLookupError:
        if cuda_total_mib is None:
            raise
        known = None
    if known is None:
        assert cuda_total_mib is not None
        if capability is None:
            raise _capability_needed(cuda_total_mib, name)
        return gpu_by_memory(cuda_total_mib, capability, label=name)
    if capability is not None and capability != known.compute_capability:
        raise GpuLookupError(
            f"{known.name} ({known.device_name}) has compute capability "
            f"{_capability_text(known.compute_capability)} ({known.sources.get('compute_capability', 'catalog')}), "
            f"not {_capability_text(capability)}; drop the capability, or name the GPU you have"
        )
    return known if cuda_total_mib is None else _with_total(known, cuda_total_mib)
