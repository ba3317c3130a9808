"""Invented CUDA MPS figures for tests: colo refuses MPS on a GPU without measured figures, and no GPU is measured
yet, so tests that plan MPS stand these in for colo/catalog/mps.yaml. They are round numbers, not measurements."""

from __future__ import annotations

import pytest

from colo.catalog import MIB
from colo.catalog import mps as mps_catalog
from colo.catalog.mps import MpsFigures

SERVER_MIB = 70
CONTEXT_MIB = {25: 300, 50: 450, 100: 600}
CUBLAS_MIB = {25: 80, 100: 120}
SM_COUNT = {25: 33, 100: 142}


def invented(gpu: str, *, reports_pinned_limit: bool | None = None) -> MpsFigures:
    return MpsFigures(
        gpu=gpu,
        server_bytes=SERVER_MIB * MIB,
        client_context_bytes={p: mib * MIB for p, mib in CONTEXT_MIB.items()},
        client_cublas_bytes={p: mib * MIB for p, mib in CUBLAS_MIB.items()},
        client_sm_count=dict(SM_COUNT),
        mem_get_info_reports_pinned_limit=reports_pinned_limit,
        source="invented for tests (measure_mps.py)",
    )


def pretend_measured(
    monkeypatch: pytest.MonkeyPatch, *gpus: str, reports_pinned_limit: bool | None = None
) -> None:
    """The MPS catalog as if `gpus` had been measured."""
    table = {name: invented(name, reports_pinned_limit=reports_pinned_limit) for name in gpus}
    monkeypatch.setattr(mps_catalog, "load_mps_catalog", lambda: table)
