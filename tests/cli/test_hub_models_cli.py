"""`colo estimate --model org/name` and `colo plan` of a stack size any model the Hub serves, through the same
huggingface_hub calls users run, here against the local Hub serving the public files of tests/hub_files."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from colo.cli import main
from colo.stackfiles import load_stack
from colo.vllm.architectures import releases_knowing
from colo.vllm.checkpoint import hub as hub_module
from colo.vllm.rules import release_key, supported_range
from tests.hub.fixtures import HUB_FILES, public_repo, sources
from tests.hub.plugin import GGUF_ONLY, SHARDED, HubRun
from tests.hub.server import Snapshot, commit_of

# Every release that registers Mllama runs it on the V0 engine, whose accounting colo does not mirror.
V0_ONLY = {"meta-llama/Llama-3.2-90B-Vision-Instruct"}
PUBLIC = sorted(set(sources()) - V0_ONLY)
# config.json's model_type ("qwen") has no config class in vLLM's _CONFIG_REGISTRY nor in transformers, and its
# auto_map names the repository's AutoConfig: vLLM loads the config only with --trust-remote-code
# (colo/vllm/config_registry.yaml).
REMOTE_CONFIG = {"Qwen/Qwen-VL-Chat-Int4"}


def trusted(model: str) -> list[str]:
    return ["--trust-remote-code"] if model in REMOTE_CONFIG else []


def serving_release(model: str) -> str:
    """The newest mirrored release whose registry serves the model's architecture (the registry may already
    hold a release whose memory rules are still being added)."""
    config = json.loads((HUB_FILES / model / "config.json").read_text())
    (architecture,) = config["architectures"]
    last_served, newest_rules = releases_knowing(architecture)[-1][1], supported_range()[1]
    return min(last_served, newest_rules, key=release_key)


@pytest.fixture(autouse=True)
def fresh_reads() -> Iterator[None]:
    hub_module._read.cache_clear()
    yield
    hub_module._read.cache_clear()


def estimate(
    capsys: pytest.CaptureFixture[str], *argv: str, release: str = "0.22.0"
) -> tuple[int, dict[str, object] | str]:
    code = main(["estimate", "--gpu", "H200", "--vllm-version", release, "--format", "json", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code in (0, 1) else err)


def stack_file(tmp_path: Path, model: str, **llm: object) -> Path:
    """The local stack with its LLM replaced by `model` at a context every public model allows."""
    source = copy.deepcopy(load_stack("local").values)
    source["pairs"][0]["llm"] = {**source["pairs"][0]["llm"], "model": model, "maxModelLen": 2048, **llm}
    path = tmp_path / "Pulumi.hub.yaml"
    path.write_text(yaml.safe_dump({"config": {f"colo:{k}": v for k, v in source.items()}}))
    return path


@pytest.mark.parametrize("model", PUBLIC)
def test_colo_estimate_sizes_every_public_model_from_the_hub(
    model: str, local_hub: HubRun, capsys: pytest.CaptureFixture[str]
) -> None:
    code, view = estimate(
        capsys, "--model", model, "--max-model-len", "2048", *trusted(model), release=serving_release(model)
    )
    assert code in (0, 1) and isinstance(view, dict), view
    assert view["model_source"] == {
        "kind": "hub",
        "repo_id": model,
        "revision": None,
        "commit": public_repo(model).refs["main"],
        "notes": view["model_source"]["notes"],  # type: ignore[index]
    }
    assert isinstance(view["weights_gib"], float) and view["weights_gib"] > 0


@pytest.mark.parametrize("model", PUBLIC)
def test_colo_plan_sizes_every_public_model_from_the_hub_in_a_stack(
    model: str, local_hub: HubRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    release = {"version": serving_release(model)}
    trust = {"trustRemoteCode": True} if model in REMOTE_CONFIG else {}
    path = stack_file(tmp_path, model, vllm=release, **trust)
    code = main(["plan", "--config", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    llm = json.loads(out)["pairs"][0]["servers"][-1] if code == 0 else None
    if llm is not None:
        assert llm["model_source"]["repo_id"] == model and llm["memory"]["weights_gib"] > 0
    else:  # a model one L40S cannot hold: refused by the budget, which sized it
        assert any(
            "do not fit" in p["message"] or "KV cache" in p["message"] for p in json.loads(out)["problems"]
        )


@pytest.mark.parametrize("model", sorted(REMOTE_CONFIG))
def test_a_public_model_whose_config_class_is_its_own_code_is_refused_without_trust(
    model: str, local_hub: HubRun, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = estimate(capsys, "--model", model, release=serving_release(model))
    assert code == 2 and "contains custom code which must be executed" in str(err)
    assert "[fix: --trust-remote-code if you trust the repository's code" in str(err)


@pytest.mark.parametrize("model", sorted(V0_ONLY))
def test_a_public_model_only_v0_serves_is_refused_in_vllms_words(
    model: str, local_hub: HubRun, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = estimate(capsys, "--model", model, release=serving_release(model))
    assert code == 2 and "is not supported by the V1 Engine. Falling back to V0." in str(err)


def test_estimate_reads_the_revision_it_is_given(
    local_hub: HubRun, capsys: pytest.CaptureFixture[str]
) -> None:
    code, view = estimate(capsys, "--model", SHARDED, "--revision", "v1")
    assert code == 0 and isinstance(view, dict)
    assert view["model_source"]["revision"] == "v1"  # type: ignore[index]


@pytest.mark.parametrize(
    ("argv", "flag", "says"),
    [
        (["--model", SHARDED, "--revision", "gone"], "--revision", "has no revision 'gone'"),
        (["--model", SHARDED, "--revision", "two words"], "--revision", "is not a revision the Hub resolves"),
        (["--model", GGUF_ONLY], "--model", "holds GGUF files only"),
        (["--model", "example/nothing-here"], "--model", "is not a model repository on the Hub"),
    ],
)
def test_estimate_refuses_what_the_hub_refuses_naming_the_flag(
    argv: list[str], flag: str, says: str, local_hub: HubRun, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = estimate(capsys, *argv)
    assert code == 2 and isinstance(err, str)
    assert f"{flag}: " in err and says in err and "Traceback" not in err


def test_plan_shows_where_a_hub_model_was_read_and_warns_it_is_unpinned(
    local_hub: HubRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "--config", str(stack_file(tmp_path, SHARDED))]) == 0
    out = capsys.readouterr().out
    commit = local_hub.hub.repo(SHARDED).refs["main"]  # type: ignore[union-attr]
    assert f"read from the Hub (chat-llm): {SHARDED} at commit {commit} (main, unpinned)" in out
    assert "colo:pairs[0].llm.revision:" in out


def test_a_gated_model_without_any_token_exits_2_naming_the_licence_page(
    local_hub: HubRun, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("HF_TOKEN")
    assert main(["plan", "--config", str(stack_file(tmp_path, "meta-llama/Llama-3.2-3B-Instruct"))]) == 2
    err = capsys.readouterr().err
    assert (
        "colo:pairs[0].llm.model:" in err
        and f"{local_hub.hub.endpoint}/meta-llama/Llama-3.2-3B-Instruct" in err
    )


def test_colo_diff_shows_a_changed_upstream_config_as_a_budget_change(
    local_hub: HubRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pull request that moves a server's revision to a commit whose config has twice the layers."""
    repo = local_hub.hub.repo(SHARDED)
    assert repo is not None
    (snapshot,) = {s.commit: s for s in repo.snapshots.values()}.values()
    config = json.loads(snapshot.files["config.json"])  # type: ignore[arg-type]
    config["num_hidden_layers"] *= 2
    files = {**snapshot.files, "config.json": json.dumps(config).encode()}
    moved = Snapshot(commit_of(files), files)
    repo.snapshots[moved.commit] = moved
    base, head = tmp_path / "base", tmp_path / "head"
    base.mkdir(), head.mkdir()
    before = stack_file(base, SHARDED, revision=snapshot.commit)
    after = stack_file(head, SHARDED, revision=moved.commit)
    assert main(["diff", "--base-config", str(before), "--config", str(after)]) == 0
    out = capsys.readouterr().out
    assert snapshot.commit in out and moved.commit in out  # the --revision flag, before -> after
    assert "| llm | KV tokens |" in out  # twice the layers: half the tokens in the pool
