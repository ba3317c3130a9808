"""Measured interference between co-located servers (interference.yaml): what a busy companion cost an LLM under
each sharing mode, and what the companion got done meanwhile, each measurement labelled with what it ran on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from colo.catalog.data import parse_yaml

LATENCY_TERMS = ("c1_ttft", "c1_tpot", "c16_ttft", "c16_tpot")


@dataclass(frozen=True)
class SharingSetting:
    """One row: the LLM beside its busy companions under `sharing`, with the companions capped and flagged so."""

    sharing: str  # time-slice | mps
    companion_cap: int | None  # CUDA_MPS_ACTIVE_THREAD_PERCENTAGE of the companions; None: uncapped
    companion_flags: tuple[str, ...]  # vLLM flags the companions ran with beyond colo's plan
    llm_cost_percent: Mapping[str, float]  # over the LLM alone, by LATENCY_TERMS; a phase not run is absent
    companion_per_s: tuple[float, float]  # the companions' requests per second, lowest and highest phase


@dataclass(frozen=True)
class Measurement:
    id: str
    gpu: str
    vllm: str
    llm: str
    companions: tuple[str, ...]
    llm_load: str
    companion_load: str
    noise: str
    alone: Mapping[str, Mapping[str, float]]
    settings: tuple[SharingSetting, ...]
    source: str

    @property
    def label(self) -> str:
        """What the numbers were measured on, said beside every one of them."""
        return (
            f"{self.gpu}, vLLM {self.vllm}, {self.llm} beside {' and '.join(self.companions)}; LLM: "
            f"{self.llm_load}; companions: {self.companion_load}"
        )

    def setting(self, sharing: str, cap: int | None, flags: tuple[str, ...] = ()) -> SharingSetting | None:
        """The row of `sharing` with the companions at `cap` and run with exactly `flags` beyond the plan's."""
        return next(
            (
                s
                for s in self.settings
                if s.sharing == sharing and s.companion_cap == cap and s.companion_flags == flags
            ),
            None,
        )

    def levers(self, sharing: str, cap: int | None, flags: tuple[str, ...]) -> tuple[SharingSetting, ...]:
        """The other rows of `sharing` at `cap`: the same companions run with other flags, measured beside."""
        return tuple(
            s
            for s in self.settings
            if s.sharing == sharing and s.companion_cap == cap and s.companion_flags != flags
        )


def _costs(raw: Mapping[str, Any]) -> dict[str, float]:
    """The row's measured terms; a row may leave a term out where that phase was not run (never guessed)."""
    unknown = sorted(set(raw) - set(LATENCY_TERMS))
    if unknown or not raw:
        raise ValueError(f"llm_cost_percent: terms {unknown or 'none'}; known: {', '.join(LATENCY_TERMS)}")
    return {term: float(raw[term]) for term in LATENCY_TERMS if term in raw}


def _setting(raw: Mapping[str, Any]) -> SharingSetting:
    low, high = raw["companion_per_s"]
    flags = tuple(str(f) for f in raw.get("companion_flags", []))
    if len(flags) % 2:
        raise ValueError(f"companion_flags: flag and value pairs, got {list(flags)}")
    return SharingSetting(
        sharing=str(raw["sharing"]),
        companion_cap=raw.get("companion_cap"),
        companion_flags=flags,
        llm_cost_percent=_costs(raw["llm_cost_percent"]),
        companion_per_s=(float(low), float(high)),
    )


def _measurement(raw: Mapping[str, Any]) -> Measurement:
    return Measurement(
        id=str(raw["id"]),
        gpu=str(raw["gpu"]),
        vllm=str(raw["vllm"]),
        llm=str(raw["llm"]),
        companions=tuple(str(c) for c in raw["companions"]),
        llm_load=str(raw["llm_load"]),
        companion_load=str(raw["companion_load"]),
        noise=str(raw["noise"]),
        alone={load: dict(figures) for load, figures in raw["alone"].items()},
        settings=tuple(_setting(s) for s in raw["settings"]),
        source=" ".join(str(raw["source"]).split()),
    )


@cache
def interference_measurements() -> tuple[Measurement, ...]:
    raw = parse_yaml(resources.files("colo.catalog").joinpath("interference.yaml").read_text())
    return tuple(_measurement(entry) for entry in raw["measurements"])
