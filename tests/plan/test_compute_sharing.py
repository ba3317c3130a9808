"""cluster.computeSharing: time-slice as today, or CUDA MPS through the route each pairing method allows, refused
where it cannot hold; the budget under MPS from measured figures only; the cost stated with its evidence."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from colo.catalog import MIB
from colo.config import parse_stack_config
from colo.plan.compute_sharing import THREAD_ENV, cost_lines
from colo.plan.stack import Plan, make_plan
from colo.roles import Role
from colo.stackfiles import load_stack
from tests.mps_figures import CONTEXT_MIB, CUBLAS_MIB, SERVER_MIB, pretend_measured


def _raw(stack: str, **cluster: Any) -> dict[str, Any]:
    raw = copy.deepcopy(load_stack(stack).values)
    raw["cluster"] = {**raw["cluster"], **cluster}
    return raw


def _plan(raw: dict[str, Any]) -> Plan:
    return make_plan(parse_stack_config(raw))


def _problems(plan: Plan) -> dict[str, str]:
    return {p.path: p.message for p in plan.problems}


def _h200_pair(sharing: str, *, cap: int | None = None, llm: str = "Qwen/Qwen3-14B") -> dict[str, Any]:
    """The pair colo's interference measurement ran: H200, vLLM 0.22.0, a dense LLM beside the 0.6B embedder."""
    embedding: dict[str, Any] = {"model": "Qwen/Qwen3-Embedding-0.6B", "vllm": {"version": "0.22.0"}}
    if cap is not None:
        embedding["mpsActiveThreadPercentage"] = cap
    return {
        "cluster": {"gpuPairing": "time-slice", "computeSharing": sharing, "kubernetesVersion": "1.34"},
        "nodePool": {"mode": "existing", "gpu": "H200", "gpusPerNode": 1, "nodeSelector": {"pool": "h200"}},
        "pairs": [
            {
                "name": "chat",
                "llm": {"model": llm, "maxModelLen": 32768, "vllm": {"version": "0.22.0"}},
                "embedding": embedding,
            }
        ],
    }


def test_time_slice_is_the_default_and_plans_as_before() -> None:
    plan = _plan(_raw("local"))
    assert plan.feasible
    (pair,) = plan.pairs
    assert pair.sharing is not None and (pair.sharing.mode, pair.sharing.route) == ("time-slice", None)
    assert all(THREAD_ENV not in dict(server.env) for server in pair.servers)
    assert plan.device_plugin is not None and plan.device_plugin.time_slices == 2


def test_mps_on_a_gpu_colo_has_not_measured_is_refused_naming_the_measurement() -> None:
    plan = _plan(_raw("local", computeSharing="mps"))
    assert not plan.pairs
    message = _problems(plan)["colo:cluster.computeSharing"]
    assert "no measured CUDA MPS figures for L40S" in message
    assert "bench/gpu/measure_mps.py" in message and "use computeSharing time-slice" in message


def test_under_mps_each_server_is_sized_with_its_client_context_and_the_first_also_holds_the_mps_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pretend_measured(monkeypatch, "L40S")
    raw = _raw("local", computeSharing="mps")
    raw["pairs"][0]["embedding"]["mpsActiveThreadPercentage"] = 25
    plan = _plan(raw)
    assert plan.feasible, plan.problems
    embedding, llm = plan.pairs[0].servers
    # vLLM 0.19.1 creates its cuBLAS handles after its snapshot, so the context is the client's context alone.
    assert embedding.memory_plan.budget.context_bytes == (CONTEXT_MIB[25] + SERVER_MIB) * MIB
    assert llm.memory_plan.budget.context_bytes == CONTEXT_MIB[100] * MIB
    assert dict(embedding.env)[THREAD_ENV] == "25"
    assert THREAD_ENV not in dict(llm.env)


def test_a_release_that_counts_cublas_before_its_snapshot_counts_the_clients_cublas_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pretend_measured(monkeypatch, "L40S")
    raw = _raw("local", computeSharing="mps")
    for role in ("llm", "embedding"):
        raw["pairs"][0][role]["vllm"] = {"version": "0.33.0"}
    plan = _plan(raw)
    assert plan.feasible, plan.problems
    llm = plan.pairs[0].llm
    assert llm.memory_plan.budget.context_bytes == (CONTEXT_MIB[100] + CUBLAS_MIB[100]) * MIB


def test_mps_on_time_slicing_nodes_takes_one_more_slice_for_the_pods_daemon(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pretend_measured(monkeypatch, "L40S")
    plan = _plan(_raw("local", computeSharing="mps"))
    assert plan.pairs[0].sharing is not None and plan.pairs[0].sharing.route == "in-pod daemon"
    assert plan.device_plugin is not None and plan.device_plugin.time_slices == 3


def test_a_thread_cap_without_mps_or_on_the_llm_is_refused() -> None:
    raw = _raw("local")
    raw["pairs"][0]["embedding"]["mpsActiveThreadPercentage"] = 25
    assert (
        "set cluster.computeSharing: mps"
        in _problems(_plan(raw))["colo:pairs[0].embedding.mpsActiveThreadPercentage"]
    )
    raw = _raw("local", computeSharing="mps")
    raw["pairs"][0]["llm"]["mpsActiveThreadPercentage"] = 50
    assert (
        "runs uncapped; cap its companions"
        in _problems(_plan(raw))["colo:pairs[0].llm.mpsActiveThreadPercentage"]
    )


def test_a_cap_outside_the_measured_percentages_is_refused_at_its_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pretend_measured(monkeypatch, "L40S")
    raw = _raw("local", computeSharing="mps")
    raw["pairs"][0]["embedding"]["mpsActiveThreadPercentage"] = 10
    message = _problems(_plan(raw))["colo:pairs[0].embedding.mpsActiveThreadPercentage"]
    assert "outside what was measured on L40S (25 %, 50 %, 100 %)" in message


def test_mps_without_native_sidecars_is_refused_because_the_daemon_must_answer_before_the_servers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pretend_measured(monkeypatch, "L40S")
    message = _problems(_plan(_raw("local", computeSharing="mps", nativeSidecars=False)))[
        "colo:cluster.computeSharing"
    ]
    assert "native sidecar" in message and "Kubernetes >= 1.29" in message


def test_mps_with_uuid_handoff_needs_vllm_that_takes_a_gpu_uuid(monkeypatch: pytest.MonkeyPatch) -> None:
    pretend_measured(monkeypatch, "L40S")
    raw = _raw("prod", computeSharing="mps", kubernetesVersion="1.34")
    problems = _problems(_plan(raw))
    message = problems["colo:pairs[0].llm.vllm.version"]
    assert "vLLM 0.20.0 does not resolve" in message and "counts the MPS server's devices" in message
    assert "colo:pairs[0].embedding.vllm.version" in problems
    for pair in raw["pairs"]:
        for role in ("llm", "embedding"):
            pair[role]["vllm"] = {"version": "0.24.0"}
    assert not [p for p in _plan(raw).problems if p.path.endswith("vllm.version")]


def test_mps_with_dra_needs_the_drivers_gate_confirmed(monkeypatch: pytest.MonkeyPatch) -> None:
    pretend_measured(monkeypatch, "L40S")
    message = _problems(_plan(_raw("dev", computeSharing="mps")))["colo:cluster.draMpsSupport"]
    assert "MPSSupport feature gate" in message and "v25.8.0" in message and "draMpsSupport: true" in message
    plan = _plan(_raw("dev", computeSharing="mps", draMpsSupport=True))
    assert plan.feasible, plan.problems
    assert plan.pairs[0].sharing is not None and plan.pairs[0].sharing.route == "dra driver"


def test_confirming_the_dra_gate_where_no_dra_mps_runs_is_refused() -> None:
    message = _problems(_plan(_raw("local", draMpsSupport=True)))["colo:cluster.draMpsSupport"]
    assert "remove it" in message


def _plugin_elsewhere(raw: dict[str, Any], replicas: int, shares_by: str) -> dict[str, Any]:
    raw["nodePool"] = {
        **raw["nodePool"],
        "devicePlugin": {"managedBy": "elsewhere", "sharedReplicas": replicas, "sharesBy": shares_by},
    }
    return raw


def test_the_device_plugins_equal_mps_split_is_refused_for_an_unequal_pair_with_the_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pretend_measured(monkeypatch, "L40S")
    plan = _plan(_plugin_elsewhere(_raw("local", computeSharing="mps"), 2, "mps"))
    message = _problems(plan)["colo:pairs[0].llm"]
    assert "each of its 2 replicas gets 50 % of the threads" in message
    assert "(total/2)" in message and "holds" in message and "MiB as planned" in message


def test_the_plugins_mps_mode_is_refused_while_its_memory_limit_is_unmeasured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two small servers fit the equal split; what cudaMemGetInfo reports under the limit decides the rest."""
    raw = _plugin_elsewhere(_raw("local", computeSharing="mps"), 2, "mps")
    raw["pairs"][0]["llm"]["gpuMemoryUtilization"] = 0.4
    pretend_measured(monkeypatch, "L40S")
    assert "has not been measured" in _problems(_plan(raw))["colo:nodePool.devicePlugin.sharesBy"]
    pretend_measured(monkeypatch, "L40S", reports_pinned_limit=False)
    assert "colo:nodePool.devicePlugin.sharesBy" not in _problems(_plan(raw))
    pretend_measured(monkeypatch, "L40S", reports_pinned_limit=True)
    assert "which colo does not size" in _problems(_plan(raw))["colo:nodePool.devicePlugin.sharesBy"]


def test_a_plugin_that_time_slices_elsewhere_must_offer_the_daemon_its_slice_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pretend_measured(monkeypatch, "L40S")
    raw = _plugin_elsewhere(_raw("local", computeSharing="mps"), 2, "time-slicing")
    message = _problems(_plan(raw))["colo:nodePool.devicePlugin.sharedReplicas"]
    assert "exactly 3 slices per GPU (the most servers in a pair, plus its MPS daemon)" in message
    assert "colo:nodePool.devicePlugin.sharedReplicas" not in _problems(
        _plan(_plugin_elsewhere(_raw("local", computeSharing="mps"), 3, "time-slicing"))
    )


def test_shares_by_describes_only_a_time_slicing_plugin_managed_elsewhere() -> None:
    raw = _raw("dev")
    raw["nodePool"] = {**raw["nodePool"], "devicePlugin": {"sharesBy": "mps"}}
    assert "Remove it" in _problems(_plan(raw))["colo:nodePool.devicePlugin.sharesBy"]


def test_the_plan_states_the_measured_cost_of_the_very_pair_that_was_measured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pretend_measured(monkeypatch, "H200")
    plan = _plan(_h200_pair("mps", cap=25))
    assert plan.feasible, plan.problems
    sharing = plan.pairs[0].sharing
    assert sharing is not None and sharing.cost.exact
    text = "\n".join(cost_lines(sharing))
    assert "embedding at 25 % of the threads" in text
    assert f"plus the MPS server's {SERVER_MIB} MiB; MPS client at 100 % threads" in text
    assert "measured on this pair: H200, vLLM 0.22.0, Qwen/Qwen3-14B beside Qwen/Qwen3-Embedding-0.6B" in text
    assert "TTFT +7 %, TPOT +16 % at concurrency 1; TTFT +7 %, TPOT +11 % at 16; companions 61-98" in text
    assert "time-slice instead: LLM TTFT +35 %, TPOT +54 % at concurrency 1" in text
    assert "colo load" not in text


def test_another_pair_gets_the_nearest_measurement_labelled_as_not_its_own() -> None:
    plan = _plan(_h200_pair("time-slice", llm="Qwen/Qwen3-32B"))
    sharing = plan.pairs[0].sharing
    assert sharing is not None and not sharing.cost.exact
    text = "\n".join(cost_lines(sharing))
    assert "NOT measured on this pair; colo's nearest measurement: H200, vLLM 0.22.0, Qwen/Qwen3-14B" in text
    assert "measure your own pair in place: colo load" in text


def test_a_cap_colo_has_not_measured_states_no_cost_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    pretend_measured(monkeypatch, "H200")
    sharing = _plan(_h200_pair("mps", cap=50)).pairs[0].sharing
    assert sharing is not None and sharing.cost.setting is None
    assert "mps with the companions at 50 % threads was not measured there" in "\n".join(cost_lines(sharing))


def test_the_json_plan_carries_the_sharing_mode_its_clients_and_the_cost_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from colo.plan.report import plan_view

    pretend_measured(monkeypatch, "H200")
    view = plan_view(_plan(_h200_pair("mps", cap=25)))["pairs"][0]["compute_sharing"]
    assert view["mode"] == "mps" and view["route"] == "in-pod daemon"
    assert view["thread_percentages"] == {Role.EMBEDDING.value: 25}
    assert view["mps_clients"][0].endswith(f"plus the MPS server's {SERVER_MIB} MiB")
    assert view["cost"]["exact"] and view["cost"]["llm_cost_percent"]["c16_tpot"] == 11
    assert "per-request records were not stored" in view["cost"]["source"]


@pytest.mark.parametrize(("cap", "context_mib"), [(5, 71), (10, 87), (15, 113)])
def test_an_h100_companion_capped_below_a_quarter_plans_with_its_measured_context_and_cost(
    cap: int, context_mib: int
) -> None:
    raw = _h200_pair("mps", cap=cap)
    raw["nodePool"]["gpu"] = "H100-SXM"
    plan = _plan(raw)
    assert plan.feasible, plan.problems
    (pair,) = plan.pairs
    assert pair.sharing is not None
    described = [client.describe() for client in pair.sharing.clients if client is not None]
    expected = f"MPS client at {cap} % threads: context {context_mib} MiB and cuBLAS 118 MiB (measured)"
    assert any(text.startswith(expected) for text in described), described
    setting = pair.sharing.cost.setting
    assert pair.sharing.cost.exact and setting is not None and setting.companion_cap == cap


def test_a_cost_row_that_ran_only_concurrency_16_says_the_rest_was_not_measured() -> None:
    raw = _h200_pair("mps", cap=5)
    raw["nodePool"]["gpu"] = "H100-SXM"
    (pair,) = _plan(raw).pairs
    assert pair.sharing is not None
    text = "\n".join(cost_lines(pair.sharing))
    assert "TTFT not measured, TPOT not measured at concurrency 1; TTFT +6 %, TPOT +10 % at 16" in text


def test_a_cost_row_with_a_term_colo_does_not_know_is_refused() -> None:
    from colo.catalog.interference import _costs

    with pytest.raises(ValueError, match="c32_tpot"):
        _costs({"c32_tpot": 5.0})
    with pytest.raises(ValueError, match="none"):
        _costs({})


def _h100_pair(*, batch: int | None = None, cap: int | None = None) -> dict[str, Any]:
    raw = _h200_pair("mps", cap=cap)
    raw["nodePool"]["gpu"] = "H100-SXM"
    if batch is not None:
        raw["pairs"][0]["embedding"]["maxNumBatchedTokens"] = batch
    return raw


def test_a_companion_at_a_measured_batch_gets_that_rows_cost_and_the_plans_batch_beside_it() -> None:
    (pair,) = _plan(_h100_pair(batch=512)).pairs
    assert pair.sharing is not None and pair.sharing.companion_flags == ("--max-num-batched-tokens", "512")
    setting = pair.sharing.cost.setting
    assert setting is not None and setting.companion_flags == ("--max-num-batched-tokens", "512")
    text = "\n".join(cost_lines(pair.sharing))
    assert (
        "mps, LLM beside busy companions: TTFT -2 %, TPOT +6 % at concurrency 1; TTFT -6 %, TPOT +8 % at 16"
        in text
    )
    assert (
        "measured there too, companions at colo's defaults: LLM TTFT -7 %, TPOT +17 % at concurrency 1"
        in text
    )


def test_an_uncapped_companion_at_the_plans_batch_is_told_the_measured_smaller_batch() -> None:
    (pair,) = _plan(_h100_pair()).pairs
    assert pair.sharing is not None
    text = "\n".join(cost_lines(pair.sharing))
    assert "TTFT +2 %, TPOT +14 % at 16; companions 74-98 requests/s" in text
    assert "measured there too, companions at maxNumBatchedTokens 512: LLM TTFT -2 %, TPOT +6 %" in text
    assert "companions 37.3-45 requests/s" in text


def test_a_companion_batch_colo_has_not_measured_states_no_cost_for_it() -> None:
    (pair,) = _plan(_h100_pair(batch=1024, cap=10)).pairs
    assert pair.sharing is not None and pair.sharing.cost.setting is None
    text = "\n".join(cost_lines(pair.sharing))
    assert (
        "mps with the companions at 10 % threads at maxNumBatchedTokens 1024 was not measured there" in text
    )
    assert "measured there too, companions at maxNumBatchedTokens 512: LLM TTFT +8 %, TPOT +7 %" in text


def test_a_companion_batch_equal_to_its_default_matches_the_rows_measured_at_colos_defaults() -> None:
    """vLLM runs the same engine whether the default batch is given or left unset; the plan's resolved limits
    (8192 tokens for the 0.6B embedder on the H100 at 0.22.0) say which value that is."""
    (unset,) = _plan(_h100_pair(cap=5)).pairs
    assert unset.sharing is not None
    (embedding,) = [s for s in unset.gpu_plan.servers if s.role is Role.EMBEDDING]
    default = embedding.budget.spec.limits.max_num_batched_tokens
    assert default == 8192
    (given,) = _plan(_h100_pair(batch=default, cap=5)).pairs
    assert given.sharing is not None and given.sharing.companion_flags == ()
    setting = given.sharing.cost.setting
    assert setting is not None and setting.companion_flags == () and setting == unset.sharing.cost.setting
    assert cost_lines(given.sharing) == cost_lines(unset.sharing)


def test_a_companion_batch_equal_to_its_default_beside_one_left_unset_is_one_setting() -> None:
    raw = _h100_pair(batch=8192)
    raw["pairs"][0]["reranker"] = {"model": "Qwen/Qwen3-Reranker-0.6B", "vllm": {"version": "0.22.0"}}
    (pair,) = _plan(raw).pairs
    assert pair.sharing is not None and pair.sharing.companion_flags == ()


def test_companions_at_different_batches_match_no_row() -> None:
    raw = _h100_pair(batch=512)
    raw["pairs"][0]["reranker"] = {"model": "Qwen/Qwen3-Reranker-0.6B", "vllm": {"version": "0.22.0"}}
    (pair,) = _plan(raw).pairs
    assert pair.sharing is not None and pair.sharing.companion_flags is None
    assert pair.sharing.cost.setting is None
    assert "uncapped companions, each with its own maxNumBatchedTokens was not measured there" in "\n".join(
        cost_lines(pair.sharing)
    )


def test_the_json_plan_lists_the_measured_levers_and_what_mps_bought() -> None:
    from colo.plan.report import plan_view

    view = plan_view(_plan(_h100_pair()))["pairs"][0]["compute_sharing"]
    (lever,) = view["cost"]["levers"]
    assert lever["companion_flags"] == ["--max-num-batched-tokens", "512"]
    assert lever["llm_cost_percent"]["c16_tpot"] == 8.2 and lever["companion_per_s"] == [37.3, 45.0]
    assert view["cost"]["mps_instead"] == []
    raw = _h100_pair()
    raw["cluster"]["computeSharing"] = "time-slice"
    rows = plan_view(_plan(raw))["pairs"][0]["compute_sharing"]["cost"]["mps_instead"]
    assert [row["companion_flags"] for row in rows] == [[], ["--max-num-batched-tokens", "512"]]


def test_companion_flags_in_a_cost_row_come_in_flag_and_value_pairs() -> None:
    from colo.catalog.interference import _setting

    with pytest.raises(ValueError, match="flag and value pairs"):
        _setting(
            {
                "sharing": "mps",
                "companion_flags": ["--max-num-batched-tokens"],
                "llm_cost_percent": {"c16_tpot": 1.0},
                "companion_per_s": [1, 2],
            }
        )


def test_a_time_slice_pair_is_told_what_the_measured_mps_arrangements_bought() -> None:
    raw = _h100_pair()
    raw["cluster"]["computeSharing"] = "time-slice"
    (pair,) = _plan(raw).pairs
    assert pair.sharing is not None
    text = "\n".join(cost_lines(pair.sharing))
    assert "time-slice, LLM beside busy companions: TTFT +12 %, TPOT +35 % at concurrency 1" in text
    assert "mps instead, companions uncapped at colo's defaults: LLM TTFT -7 %, TPOT +17 %" in text
    assert "mps instead, companions uncapped at maxNumBatchedTokens 512: LLM TTFT -2 %, TPOT +6 %" in text


def test_an_mps_pair_is_not_told_mps_instead() -> None:
    (pair,) = _plan(_h100_pair()).pairs
    assert pair.sharing is not None and pair.sharing.cost.mps_rows == ()
    assert "mps instead" not in "\n".join(cost_lines(pair.sharing))
