"""Requests for pack tests: the field report's three pairs, and small ones built in code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from colo.pack.requirements import PackFile, PackRequest, load_pack_file, request_from_file
from tests.paths import REPO_ROOT

FIELD_REPORT = REPO_ROOT / "packs" / "field-report.yaml"
VLLM = {"version": "0.20.2"}
EMBEDDER = {"model": "Qwen/Qwen3-Embedding-0.6B", "maxModelLen": 8192, "vllm": VLLM}


@pytest.fixture(scope="session")
def field_report() -> PackRequest:
    return load_pack_file(FIELD_REPORT)


def models_request(llms: list[dict[str, Any]], **extra: Any) -> PackRequest:
    """A request as a models file would give it, with the 0.6B embedder unless `embeddings` says otherwise."""
    raw = {"llms": llms, "embeddings": [EMBEDDER], **extra}
    return request_from_file(PackFile.model_validate(raw), "test")


def write_models(path: Path, raw: dict[str, Any]) -> Path:
    import yaml

    path.write_text(yaml.safe_dump(raw))
    return path
