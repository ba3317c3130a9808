"""Fixtures for tests that read models from a Hub: the local Hub serving tests/hub_files (and test-made
repositories), with HF_ENDPOINT pointed at it and an HF_HOME of the test's own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hub.fixtures import ACCESS_TOKEN, HUB_FILES, public_repos
from tests.hub.safetensors_files import llama_tensors, sparse_safetensors
from tests.hub.server import HubRepo, LocalHub, Snapshot, commit_of

SHARDED = "colo-tests/tiny-llama-sharded"  # made here: a real Llama 3.2 1B config over two sparse shards
GGUF_ONLY = "colo-tests/only-gguf"
NO_CONFIG = "colo-tests/no-config"
OTHER_TOKEN = "hf_colo_tests_no_access"  # a token the Hub knows, without access to the gated repositories


def sharded_repo() -> HubRepo:
    """Two shards whose headers list every tensor of the real Llama-3.2-1B-Instruct config's geometry."""
    config_bytes = (HUB_FILES / "meta-llama" / "Llama-3.2-1B-Instruct" / "config.json").read_bytes()
    config = json.loads(config_bytes)
    h, vocab, layers = config["hidden_size"], config["vocab_size"], config["num_hidden_layers"]
    first = {"model.embed_tokens.weight": ("BF16", (vocab, h)), **llama_tensors(config, range(layers // 2))}
    second = {
        **llama_tensors(config, range(layers // 2, layers)),
        "model.norm.weight": ("BF16", (h,)),
        "lm_head.weight": ("BF16", (vocab, h)),  # stored untied here, so that a part of its own is counted
    }
    shards = {"model-00001-of-00002.safetensors": first, "model-00002-of-00002.safetensors": second}
    weight_map = {name: shard for shard, tensors in shards.items() for name in tensors}
    sparse = {shard: sparse_safetensors(tensors) for shard, tensors in shards.items()}
    total = sum(s.size - len(s.head) for s in sparse.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    files = {
        "config.json": config_bytes,
        "model.safetensors.index.json": json.dumps(index).encode(),
        **sparse,
    }
    commit = commit_of(files)
    return HubRepo(SHARDED, {commit: Snapshot(commit, files)}, {"main": commit, "v1": commit})


def made_repo(repo_id: str, files: dict[str, bytes]) -> HubRepo:
    commit = commit_of(dict(files))
    return HubRepo(repo_id, {commit: Snapshot(commit, dict(files))}, {"main": commit})


def all_repos() -> list[HubRepo]:
    return [
        *public_repos(),
        sharded_repo(),
        made_repo(
            GGUF_ONLY, {"README.md": b"# GGUF", "model-Q4_K_M.gguf": b"GGUF", "model-Q8_0.gguf": b"GGUF"}
        ),
        made_repo(NO_CONFIG, {"README.md": b"# nothing to load"}),
    ]


@dataclass(frozen=True)
class HubRun:
    hub: LocalHub
    home: Path

    @property
    def requests(self) -> int:
        return len(self.hub.requests)


@pytest.fixture
def local_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[HubRun]:
    """The local Hub for one test: HF_ENDPOINT points at it, HF_HOME is the test's own, HF_TOKEN has access."""
    with LocalHub(all_repos(), {ACCESS_TOKEN}, {ACCESS_TOKEN, OTHER_TOKEN}) as hub:
        home = tmp_path / "hf-home"
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        monkeypatch.setenv("HF_HOME", str(home))
        monkeypatch.setenv("HF_TOKEN_PATH", str(home / "token"))
        monkeypatch.setenv("HF_TOKEN", ACCESS_TOKEN)
        yield HubRun(hub, home)
