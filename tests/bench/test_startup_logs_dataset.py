"""The startup-log dataset carries, for every log, its provenance, what it covers and why it is excluded."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bench.accuracy import informed_ids
from colo.catalog.data import parse_yaml

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data" / "vllm_startup_logs.yaml"
REQUIRED = [
    "id",
    "source",
    "date",
    "vllm_version",
    "engine",
    "gpu",
    "gpu_total_gib",
    "tensor_parallel_size",
    "model",
    "quantization",
    "kv_cache_dtype",
    "max_model_len",
    "gpu_memory_utilization",
    "model_loading_gib",
    "available_kv_cache_gib",
    "kv_cache_tokens",
    "max_concurrency",
    "free_at_startup_gib",
    "requested_gib",
    "startup_error",
    "excerpt",
    "notes",
    "covers",
    "usable",
    "excluded_because",
]
FIGURES = (
    "model_loading_gib",
    "available_kv_cache_gib",
    "kv_cache_tokens",
    "max_concurrency",
    "startup_error",
)


def _entries() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = parse_yaml(DATA.read_text())["entries"]
    return entries


def test_every_entry_has_every_schema_key_and_a_unique_id() -> None:
    entries = _entries()
    for entry in entries:
        missing = [key for key in REQUIRED if key not in entry]
        assert not missing, f"{entry.get('id')}: missing {missing}"
    ids = [entry["id"] for entry in entries]
    assert len(ids) == len(set(ids))


def test_every_entry_says_what_it_covers_and_an_excluded_one_says_why() -> None:
    for entry in _entries():
        assert entry["covers"] and all(isinstance(tag, str) and tag for tag in entry["covers"]), entry["id"]
        assert isinstance(entry["usable"], bool), entry["id"]
        if entry["usable"]:
            assert not entry["excluded_because"], entry["id"]
        else:
            assert entry["excluded_because"], entry["id"]


def test_a_usable_entry_cites_a_public_address() -> None:
    for entry in _entries():
        if entry["usable"]:
            assert re.match(r"^https?://", str(entry["source"])), entry["id"]


def test_no_log_is_in_the_dataset_twice() -> None:
    seen: dict[tuple[str, ...], str] = {}
    for entry in _entries():
        key = (
            str(entry["source"]),
            str(entry["model"]),
            str(entry["max_model_len"]),
            *(str(entry[f]) for f in FIGURES),
        )
        assert key not in seen, f"{entry['id']} repeats {seen.get(key)}"
        seen[key] = entry["id"]


def test_every_log_a_catalog_names_as_informing_a_constant_is_in_the_dataset() -> None:
    ids = {entry["id"] for entry in _entries()}
    informed = informed_ids()
    assert informed, "the catalogs name the logs their constants came from"
    assert informed <= ids, informed - ids
