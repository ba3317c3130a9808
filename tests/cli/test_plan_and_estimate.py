"""`colo plan` and `colo estimate` as a user runs them: output, and exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from colo.cli import main
from colo.stackfiles import load_stack


def test_plan_of_the_local_stack_fits_and_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "local"]) == 0
    out = capsys.readouterr().out
    assert "pair chat -> node 0 GPU 0: fits" in out
    assert "startup checks in order: chat-embedding" in out


def test_plan_json_carries_the_budget_placement_and_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "prod", "--format", "json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["node_pool"]["node_count"] == 1 and view["node_pool"]["gpus_per_node"] == 4
    assert [(p["node"], p["gpu"]) for p in view["pairs"]] == [(0, 0), (0, 1), (0, 2)]
    llm = view["pairs"][1]["servers"][-1]
    for key in (
        "weights_gib",
        "activation_peak_gib",
        "cuda_graph_gib",
        "kv_cache_gib",
        "kv_tokens",
        "max_concurrency",
        "gpu_memory_utilization",
        "footprint_mib",
    ):
        assert key in llm["memory"]
    assert "--gpu-memory-utilization" in llm["vllm_args"]
    assert llm["startup_probe_seconds"] > 0


def _stack_file(tmp_path: Path, mutate: object) -> Path:
    values = load_stack("local").values
    assert callable(mutate)
    mutate(values)
    path = tmp_path / "Pulumi.test.yaml"
    path.write_text(yaml.safe_dump({"config": {f"colo:{k}": v for k, v in values.items()}}))
    return path


def test_an_infeasible_plan_exits_one_and_names_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def overcommit(values: dict) -> None:  # type: ignore[type-arg]
        values["pairs"][0]["llm"]["gpuMemoryUtilization"] = 0.95

    assert main(["plan", "--config", str(_stack_file(tmp_path, overcommit))]) == 1
    out = capsys.readouterr().out
    assert "DOES NOT FIT" in out
    assert "colo:pairs[0].llm.gpuMemoryUtilization" in out


def test_an_invalid_config_exits_two_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def typo(values: dict) -> None:  # type: ignore[type-arg]
        values["pairs"][0]["llm"]["maxModelLenght"] = 4096

    assert main(["plan", "--config", str(_stack_file(tmp_path, typo))]) == 2
    err = capsys.readouterr().err
    assert "colo:pairs[0].llm.maxModelLenght: unknown key" in err
    assert "Traceback" not in err


def test_a_model_outside_the_catalog_with_no_hub_in_reach_is_an_invalid_config_that_names_the_ways_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def unknown(values: dict) -> None:  # type: ignore[type-arg]
        values["pairs"][0]["llm"]["model"] = "example/unknown-13b"

    assert main(["plan", "--config", str(_stack_file(tmp_path, unknown))]) == 2
    err = capsys.readouterr().err
    assert (
        "colo:pairs[0].llm.model: 'example/unknown-13b' is not in colo's model catalog, and cannot reach"
        in err
    )
    assert "HF_ENDPOINT" in err and "`profile`" in err
    assert "Traceback" not in err


UNPLANNABLE = [
    (
        "a vLLM release colo does not mirror",
        "pairs.0.llm.vllm",
        {"version": "0.40.0"},
        "colo:pairs[0].llm.vllm.version",
    ),
    ("a GPU colo does not know", "nodePool.gpu", "B300", "colo:nodePool.gpu"),
    (
        "a KV pool flag the release lacks",
        "pairs.0.llm.kvCacheMemoryBytes",
        2**30,
        "colo:pairs[0].llm.kvCacheMemoryBytes",
    ),
]


@pytest.mark.parametrize(("what", "key", "value", "path"), UNPLANNABLE, ids=[u[0] for u in UNPLANNABLE])
@pytest.mark.parametrize("command", ["plan", "render"])
def test_a_name_colo_cannot_plan_for_exits_2_as_an_invalid_config(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    what: str,
    key: str,
    value: object,
    path: str,
) -> None:
    def change(values: dict) -> None:  # type: ignore[type-arg]
        *parents, last = key.split(".")
        node = values
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value
        if last == "kvCacheMemoryBytes":
            node["vllm"] = {"version": "0.10.1.1"}

    out = ["--out", str(tmp_path / "out")] if command == "render" else []
    assert main([command, "--config", str(_stack_file(tmp_path, change)), *out]) == 2, what
    err = capsys.readouterr().err
    assert err.startswith("invalid stack config")
    assert path in err
    assert not (tmp_path / "out").exists()


def _estimate(capsys: pytest.CaptureFixture[str], *flags: str, gpu: str = "L40S") -> tuple[int, dict]:  # type: ignore[type-arg]
    """Qwen3-8B on vLLM 0.20.2, with the flags given."""
    argv = [
        "estimate",
        "--model",
        "Qwen/Qwen3-8B",
        "--gpu",
        gpu,
        "--vllm-version",
        "0.20.2",
        "--format",
        "json",
    ]
    code = main([*argv, *flags])
    return code, json.loads(capsys.readouterr().out)


def test_estimate_prints_the_keys_tools_depend_on(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _estimate(capsys, "--gpu-memory-utilization", "0.9", "--max-model-len", "32768", "--json")
    assert code == 0
    for key in (
        "weights_gib",
        "non_torch_gib",
        "activation_peak_gib",
        "cuda_graph_gib",
        "kv_cache_gib",
        "kv_tokens",
        "max_concurrency",
        "requested_gib",
        "startup_ok",
    ):
        assert key in out
    assert out["requested_gib"] == 39.95


def test_estimate_with_little_free_memory_fails_the_startup_check(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _estimate(capsys, "--gpu-memory-utilization", "0.55", "--free-memory-gib", "0.9")
    assert code == 1 and out["startup_ok"] is False
    assert "(0.55, 24.42 GiB)" in out["startup_error"]


def test_estimate_with_fixed_kv_bytes_derives_tokens_from_them(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = _estimate(
        capsys, "--kv-cache-memory-bytes", str(9 * 2**30), "--max-model-len", "8192", gpu="H100-SXM"
    )
    assert out["kv_cache_gib"] == 9.0
    assert out["kv_tokens"] == 9 * 2**30 // (144 * 1024 * 16) * 16


def test_estimate_refuses_an_unknown_gpu_with_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "Radeon RX 7900"]) == 2
    assert "L40S" in capsys.readouterr().err


def test_estimate_refuses_a_utilization_outside_zero_and_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "L40S", "--gpu-memory-utilization", "1.5"])
        == 2
    )
    assert "--gpu-memory-utilization" in capsys.readouterr().err


def test_mtp_on_a_model_without_mtp_layers_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def mtp(values: dict) -> None:  # type: ignore[type-arg]
        values["pairs"][0]["llm"]["speculative"] = {"method": "mtp", "numSpeculativeTokens": 1}

    assert main(["plan", "--config", str(_stack_file(tmp_path, mtp))]) == 1
    assert "colo:pairs[0].llm.speculative.method" in capsys.readouterr().out


def test_a_gated_model_without_a_token_is_flagged_but_still_planned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def gated(values: dict) -> None:  # type: ignore[type-arg]
        values["pairs"][0]["llm"]["model"] = "meta-llama/Llama-3.1-8B-Instruct"
        values["pairs"][0]["llm"]["maxModelLen"] = 16384

    assert main(["plan", "--config", str(_stack_file(tmp_path, gated))]) == 0
    out = capsys.readouterr().out
    assert "WARNINGS:" in out and "colo:pairs[0].llm.model" in out and "hfToken" in out


def test_estimate_accepts_vllms_quantization_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _estimate(capsys, "--quantization", "fp8_per_tensor")
    assert code in (0, 1) and out["weights_gib"] < 10


def test_estimate_refuses_a_quantization_the_checkpoint_contradicts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [
        "estimate",
        "--model",
        "Qwen/Qwen3-8B-FP8",
        "--gpu",
        "L40S",
        "--vllm-version",
        "0.20.2",
        "--quantization",
        "awq",
    ]
    assert main(argv) == 2
    assert "does not match the quantization method" in capsys.readouterr().err


def _llm_server(view: dict) -> dict:  # type: ignore[type-arg]
    servers = view["pairs"][0]["servers"]
    return next(s for s in servers if s["role"] == "llm")


def _plan_json(tmp_path: Path, capsys: pytest.CaptureFixture[str], mutate: object) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main(["plan", "--config", str(_stack_file(tmp_path, mutate)), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_server_that_sets_dtype_is_sized_in_it_and_passes_it_to_vllm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def float32(values: dict) -> None:  # type: ignore[type-arg]
        values["pairs"][0]["llm"]["dtype"] = "float32"

    _, default = _plan_json(tmp_path, capsys, lambda values: None)
    code, wide = _plan_json(tmp_path, capsys, float32)
    assert code == 0
    assert "--dtype" not in _llm_server(default)["vllm_args"]
    args = _llm_server(wide)["vllm_args"]
    assert args[args.index("--dtype") + 1] == "float32"
    assert _llm_server(wide)["memory"]["dtype"] == "float32"
    assert _llm_server(wide)["memory"]["weights_gib"] > _llm_server(default)["memory"]["weights_gib"]


def test_a_dtype_the_model_type_refuses_stops_the_plan_at_the_servers_dtype_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def gemma_in_half(values: dict) -> None:  # type: ignore[type-arg]
        values["pairs"][0]["llm"].update(model="google/gemma-3-27b-it", dtype="half", maxModelLen=4096)

    assert main(["plan", "--config", str(_stack_file(tmp_path, gemma_in_half))]) == 1
    out = capsys.readouterr().out
    assert "colo:pairs[0].llm.dtype" in out and "does not support float16" in out


def test_estimate_sizes_the_binding_pipeline_stage_and_lists_every_stage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    flags = ["estimate", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100-SXM"]
    pipeline = ["--pipeline-parallel-size", "2", "--dtype", "half", "--format", "json"]
    assert main([*flags, "--vllm-version", "0.19.0", *pipeline]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["dtype"] == "float16" and view["pipeline"]["binding_stage"] == 1
    assert [s["layers"] for s in view["pipeline"]["stages"]] == [[0, 16], [16, 32]]


def test_estimate_refuses_a_pipeline_size_vllm_cannot_run_at_its_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    flags = ["estimate", "--model", "BAAI/bge-m3", "--gpu", "H100-SXM", "--runner", "pooling"]
    assert main([*flags, "--pipeline-parallel-size", "2"]) == 2
    assert "--pipeline-parallel-size" in capsys.readouterr().err
