"""A model named by its Hub id is read as vLLM reads it, through huggingface_hub against a local Hub: config.json
and its side files at one commit, exact bytes from safetensors headers by range requests, cached so a second read
asks nothing, and every refusal one sentence."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from colo.vllm import HubError, catalog_architecture, named_model
from colo.vllm.checkpoint import hub as hub_module
from colo.vllm.checkpoint.files import architecture_from_path
from colo.vllm.checkpoint.hub import read_hub_model
from tests.hub.fixtures import HUB_FILES, public_repo
from tests.hub.plugin import GGUF_ONLY, NO_CONFIG, OTHER_TOKEN, SHARDED, HubRun

GATED = "meta-llama/Llama-3.2-1B-Instruct"
INDEXED = "google/gemma-2-9b-it"  # config and a real index, no shard bytes served
BRANCHED = "TheBloke/Wizard-Vicuna-30B-Uncensored-GPTQ"
BRANCH = "gptq-8bit-128g-actorder_False"


@pytest.fixture(autouse=True)
def fresh_reads() -> Iterator[None]:
    """Each test starts as a new process would: nothing remembered in memory, only what is on disk."""
    hub_module._read.cache_clear()
    yield
    hub_module._read.cache_clear()


def test_a_hub_model_reads_as_its_own_files_read_from_disk(local_hub: HubRun) -> None:
    read = read_hub_model("Qwen/Qwen2.5-VL-7B-Instruct")
    local = architecture_from_path(
        HUB_FILES / "Qwen" / "Qwen2.5-VL-7B-Instruct", "Qwen/Qwen2.5-VL-7B-Instruct"
    )
    assert read.arch.num_layers == local.num_layers == 28
    assert (read.arch.hidden_size, read.arch.num_kv_heads, read.arch.vocab_size) == (
        local.hidden_size,
        local.num_kv_heads,
        local.vocab_size,
    )
    assert read.arch.vision == local.vision
    assert read.commit == public_repo("Qwen/Qwen2.5-VL-7B-Instruct").refs["main"]


def test_exact_bytes_come_from_every_shards_header_by_range_requests(local_hub: HubRun) -> None:
    read = read_hub_model(SHARDED)
    index = local_hub.hub.repo(SHARDED)
    assert index is not None
    snapshot = next(iter(index.snapshots.values()))
    total = json.loads(snapshot.files["model.safetensors.index.json"])["metadata"]["total_size"]  # type: ignore[arg-type]
    assert read.arch.checkpoint_bytes == total
    config = json.loads((HUB_FILES / GATED / "config.json").read_text())
    lm_head = config["vocab_size"] * config["hidden_size"] * 2
    assert read.arch.checkpoint_bytes_by_part["lm_head"] == lm_head
    assert read.arch.checkpoint_bytes_by_part["model"] == total - lm_head
    ranged = [path for method, path in local_hub.hub.requests if path.endswith(".safetensors")]
    assert sorted(set(ranged)) == [
        f"/{SHARDED}/resolve/{read.commit}/model-0000{n}-of-00002.safetensors" for n in (1, 2)
    ]


def test_weights_are_never_downloaded(local_hub: HubRun) -> None:
    read_hub_model(SHARDED)
    blobs = [p for p in (local_hub.home / "hub").rglob("*") if p.is_file() and p.stat().st_size > 1 << 20]
    assert blobs == []


def test_an_index_without_readable_headers_gives_its_exact_total_and_says_so(local_hub: HubRun) -> None:
    read = read_hub_model(INDEXED)
    index = json.loads((HUB_FILES / INDEXED / "model.safetensors.index.json").read_text())
    assert read.arch.checkpoint_bytes == index["metadata"]["total_size"]
    assert any("the index's exact total" in note for note in read.notes)


def test_a_commit_read_once_is_read_again_with_no_request(local_hub: HubRun) -> None:
    first = read_hub_model(SHARDED)
    hub_module._read.cache_clear()
    before = local_hub.requests
    again = read_hub_model(SHARDED, first.commit)
    assert local_hub.requests == before
    assert again.arch.checkpoint_bytes == first.arch.checkpoint_bytes


def test_a_branch_costs_one_request_to_learn_where_it_points_and_downloads_nothing_again(
    local_hub: HubRun,
) -> None:
    read_hub_model(SHARDED, "v1")
    hub_module._read.cache_clear()
    before = len(local_hub.hub.requests)
    read_hub_model(SHARDED, "v1")
    assert [path for _, path in local_hub.hub.requests[before:]] == [f"/api/models/{SHARDED}/revision/v1"]


def test_offline_a_warm_cache_answers_and_the_hub_is_never_asked(
    local_hub: HubRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    online = read_hub_model(SHARDED)
    hub_module._read.cache_clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = local_hub.requests
    offline = read_hub_model(SHARDED)
    assert local_hub.requests == before
    assert (offline.commit, offline.arch.checkpoint_bytes) == (online.commit, online.arch.checkpoint_bytes)


def test_offline_without_a_cache_is_refused_naming_the_cache_and_the_setting(
    local_hub: HubRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubError) as refused:
        read_hub_model(SHARDED)
    message = str(refused.value)
    assert message.startswith(f"HF_HUB_OFFLINE is set and {SHARDED} at revision 'main' is not in the cache")
    assert str(local_hub.home / "hub") in message and local_hub.requests == 0


def test_a_hub_out_of_reach_falls_back_to_where_the_revision_pointed_last(
    local_hub: HubRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    online = read_hub_model(SHARDED)
    hub_module._read.cache_clear()
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    fallback = read_hub_model(SHARDED)
    assert fallback.commit == online.commit
    assert any("could not be reached" in note and online.commit in note for note in fallback.notes)


def test_no_network_and_no_cache_is_one_sentence_with_the_ways_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    with pytest.raises(HubError) as refused:
        read_hub_model(SHARDED)
    message = str(refused.value)
    assert message.startswith("cannot reach the Hugging Face Hub at http://127.0.0.1:9")
    assert "HF_ENDPOINT" in message and "`profile`" in message and "\n" not in message


def test_a_gated_model_without_a_token_names_its_licence_page_and_colos_secret(
    local_hub: HubRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(HubError) as refused:
        read_hub_model(GATED)
    message = str(refused.value)
    assert f"{GATED} is gated on the Hugging Face Hub and no token was given" in message
    assert f"{local_hub.hub.endpoint}/{GATED}" in message and "hfToken" in message


def test_a_token_without_access_to_a_gated_model_is_told_so(
    local_hub: HubRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", OTHER_TOKEN)
    with pytest.raises(HubError, match=r"the Hugging Face token has no access to .*, which is gated"):
        read_hub_model(GATED)


def test_a_token_the_hub_does_not_know_is_refused_as_such(
    local_hub: HubRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    with pytest.raises(HubError, match=r"refused the token \(401\)"):
        read_hub_model(SHARDED)


def test_the_stacks_token_wins_over_the_environments(
    local_hub: HubRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", OTHER_TOKEN)
    assert read_hub_model(GATED, token="hf_colo_tests_access").arch.num_layers == 16


def test_a_repository_the_hub_lacks_is_named(local_hub: HubRun) -> None:
    with pytest.raises(
        HubError, match="example/nothing-here is not a model repository on the Hub"
    ) as refused:
        read_hub_model("example/nothing-here")
    assert refused.value.about == "model"


def test_a_revision_the_repository_lacks_is_refused_at_the_revision(local_hub: HubRun) -> None:
    with pytest.raises(HubError, match=f"{SHARDED} has no revision 'no-such-branch'") as refused:
        read_hub_model(SHARDED, "no-such-branch")
    assert refused.value.about == "revision"


def test_a_gguf_only_repository_is_refused_with_what_to_name_instead(local_hub: HubRun) -> None:
    with pytest.raises(HubError, match=r"holds GGUF files only .*model-Q4_K_M\.gguf.* and no config\.json"):
        read_hub_model(GGUF_ONLY)


def test_a_repository_without_a_config_cannot_be_loaded_by_vllm(local_hub: HubRun) -> None:
    with pytest.raises(HubError, match=r"has no config\.json, so vLLM cannot load it"):
        read_hub_model(NO_CONFIG)


def test_ids_match_as_the_hub_matches_them(local_hub: HubRun) -> None:
    read = read_hub_model(SHARDED.upper())
    assert read.repo_id == SHARDED


def test_a_branch_is_sized_at_its_own_commit(local_hub: HubRun) -> None:
    main = read_hub_model(BRANCHED)
    branch = read_hub_model(BRANCHED, BRANCH)
    repo = public_repo(BRANCHED)
    assert (main.commit, branch.commit) == (repo.refs["main"], repo.refs[BRANCH])
    assert main.arch.quant_scheme != branch.arch.quant_scheme  # 4-bit on main, 8-bit on the branch


def test_a_catalog_id_in_another_case_is_the_catalog_entry_with_no_request(local_hub: HubRun) -> None:
    arch, hub = named_model("qwen/QWEN3-8B")
    assert hub is None and arch == catalog_architecture("Qwen/Qwen3-8B")
    assert local_hub.requests == 0


def test_a_pinned_revision_reads_even_a_catalog_model_from_the_hub(local_hub: HubRun) -> None:
    with pytest.raises(HubError, match="Qwen/Qwen3-8B is not a model repository on the Hub"):
        named_model("Qwen/Qwen3-8B", "main")
