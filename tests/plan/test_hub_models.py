"""A stack may name any model on the Hub: it is read at the server's revision, planned like a catalog model, shown
with the commit it was sized at, pinned for vLLM where the stack pins it, and warned about where it is not."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from colo.config import parse_stack_config
from colo.errors import ConfigError
from colo.plan.report import plan_view
from colo.plan.stack import Plan, make_plan
from colo.stackfiles import load_stack
from colo.vllm.checkpoint import hub as hub_module
from tests.hub.fixtures import public_repo
from tests.hub.plugin import HubRun
from tests.hub.server import Snapshot, commit_of

EMBEDDER = "Qwen/Qwen3-Embedding-4B"
LLM = "microsoft/phi-4"


@pytest.fixture(autouse=True)
def fresh_reads() -> Iterator[None]:
    hub_module._read.cache_clear()
    yield
    hub_module._read.cache_clear()


def _stack(**llm: Any) -> dict[str, Any]:
    """The local stack (one L40S) with its LLM replaced by a model only the Hub has."""
    raw = copy.deepcopy(load_stack("local").values)
    raw["pairs"][0]["llm"] = {**raw["pairs"][0]["llm"], "model": LLM, "maxModelLen": 8192, **llm}
    return raw


def _plan(raw: dict[str, Any]) -> Plan:
    return make_plan(parse_stack_config(raw))


def test_a_model_only_the_hub_has_is_planned_and_shows_the_commit_it_was_sized_at(local_hub: HubRun) -> None:
    plan = _plan(_stack())
    assert plan.feasible, plan.problems
    llm = plan.pairs[0].llm
    commit = public_repo(LLM).refs["main"]
    assert (llm.source.kind, llm.source.repo_id, llm.source.commit) == ("hub", LLM, commit)
    view = plan_view(plan)["pairs"][0]["servers"][-1]["model_source"]
    assert view == {"kind": "hub", "repo_id": LLM, "revision": None, "commit": commit, "notes": []}


def test_an_unpinned_hub_model_is_a_warning_that_gives_the_commit_to_pin(local_hub: HubRun) -> None:
    plan = _plan(_stack())
    commit = public_repo(LLM).refs["main"]
    warning = next(w for w in plan.warnings if w.path == "colo:pairs[0].llm.revision")
    assert f"`revision: {commit}`" in warning.message
    assert "--revision" not in plan.pairs[0].llm.args


def test_a_pinned_revision_reaches_vllm_as_the_commit_it_resolved_to(local_hub: HubRun) -> None:
    plan = _plan(_stack(revision="main"))
    args = list(plan.pairs[0].llm.args)
    assert args[args.index("--revision") + 1] == public_repo(LLM).refs["main"]
    assert not any(w.path == "colo:pairs[0].llm.revision" for w in plan.warnings)


def test_a_changed_upstream_config_changes_the_plan(local_hub: HubRun) -> None:
    """The same stack, planned after the Hub's main moved to a config with twice the layers."""
    before = _plan(_stack(revision="main")).pairs[0].llm
    repo = local_hub.hub.repo(LLM)
    assert repo is not None
    (snapshot,) = repo.snapshots.values()
    config = json.loads(snapshot.files["config.json"])  # type: ignore[arg-type]
    config["num_hidden_layers"] = 2 * config["num_hidden_layers"]
    files = {**snapshot.files, "config.json": json.dumps(config).encode()}
    moved = Snapshot(commit_of(files), files)
    repo.snapshots[moved.commit] = moved
    repo.refs["main"] = moved.commit
    hub_module._read.cache_clear()
    after = _plan(_stack(revision="main")).pairs[0].llm
    assert after.source.commit == moved.commit != before.source.commit
    assert after.memory_plan.budget.weights_bytes > before.memory_plan.budget.weights_bytes
    assert after.args != before.args


def test_a_gated_hub_model_planned_without_colos_secret_warns_about_the_servers_download(
    local_hub: HubRun,
) -> None:
    raw = _stack(model="meta-llama/Llama-3.2-3B-Instruct")
    plan = _plan(raw)
    assert any(w.path == "colo:pairs[0].llm.model" and "gated" in w.message for w in plan.warnings)


def test_a_hub_refusal_is_an_invalid_config_at_the_key_it_is_about(local_hub: HubRun) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_stack_config(_stack(revision="no-such-branch"))
    assert [p.path for p in refused.value.problems] == ["colo:pairs[0].llm.revision"]
    with pytest.raises(ConfigError) as refused:
        parse_stack_config(_stack(model="example/nothing-here"))
    assert [p.path for p in refused.value.problems] == ["colo:pairs[0].llm.model"]


def test_an_invalid_revision_is_refused_by_the_schema_without_asking_the_hub(local_hub: HubRun) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_stack_config(_stack(revision="two words"))
    assert refused.value.problems[0].path == "colo:pairs[0].llm.revision"
    assert local_hub.requests == 0


def test_the_local_stack_plans_with_no_hub_at_all(local_hub: HubRun) -> None:
    plan = make_plan(parse_stack_config(load_stack("local").values))
    assert plan.feasible and local_hub.requests == 0
    assert all(s.source.kind == "catalog" for p in plan.pairs for s in p.servers)


def test_an_embedder_from_the_hub_pairs_with_a_catalog_llm(local_hub: HubRun) -> None:
    raw = copy.deepcopy(load_stack("local").values)
    raw["pairs"][0]["embedding"] = {**raw["pairs"][0]["embedding"], "model": EMBEDDER, "revision": "main"}
    plan = make_plan(parse_stack_config(raw))
    assert plan.feasible, plan.problems
    assert plan.pairs[0].servers[0].source.repo_id == EMBEDDER
