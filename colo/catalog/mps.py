"""CUDA MPS figures per GPU (mps.yaml): the MPS server's memory and one client's context by thread percentage.

A figure the file leaves null is not measured, and stays None here: callers refuse rather than assume one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from colo.catalog.data import parse_yaml
from colo.catalog.units import MIB


@dataclass(frozen=True)
class MpsFigures:
    """What MPS costs in memory on one GPU, as measured; each None or empty mapping is not measured yet."""

    gpu: str  # the catalog GPU name
    server_bytes: int | None
    client_context_bytes: Mapping[int, int] = field(default_factory=dict)  # thread percentage -> bytes
    client_cublas_bytes: Mapping[int, int] = field(default_factory=dict)
    client_sm_count: Mapping[int, int] = field(default_factory=dict)  # thread percentage -> SMs CUDA reports
    mem_get_info_reports_pinned_limit: bool | None = None
    source: str = ""

    @property
    def measured(self) -> bool:
        """Enough to size a pair: the server's memory and at least one client figure of each kind."""
        figures = (self.client_context_bytes, self.client_cublas_bytes, self.client_sm_count)
        return self.server_bytes is not None and all(figures)


def _by_percentage(raw: Mapping[Any, Any] | None) -> dict[int, int]:
    return {int(percentage): int(mib) * MIB for percentage, mib in (raw or {}).items()}


def _figures(name: str, entry: Mapping[str, Any]) -> MpsFigures:
    server = entry.get("server_mib")
    return MpsFigures(
        gpu=name,
        server_bytes=None if server is None else int(server) * MIB,
        client_context_bytes=_by_percentage(entry.get("client_context_mib")),
        client_cublas_bytes=_by_percentage(entry.get("client_cublas_mib")),
        client_sm_count={int(p): int(n) for p, n in (entry.get("client_sm_count") or {}).items()},
        mem_get_info_reports_pinned_limit=entry.get("mem_get_info_reports_pinned_limit"),
        source=str(entry.get("source", "")),
    )


@cache
def load_mps_catalog() -> dict[str, MpsFigures]:
    raw = parse_yaml(resources.files("colo.catalog").joinpath("mps.yaml").read_text())
    return {name: _figures(name, entry) for name, entry in raw["gpus"].items()}


def mps_figures(gpu_name: str) -> MpsFigures | None:
    """The GPU's MPS figures by its catalog name; None where the catalog has no entry for it at all."""
    return load_mps_catalog().get(gpu_name)
