"""The tensor-parallel run, prepared here and run against fakes: the spec puts every server on the GPUs its plan
placed it on and keeps NVLink multicast off, the runner reads every GPU, and the comparison sets each rank and
each GPU beside the plan."""

from __future__ import annotations

import functools
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.gpu.compare_run import gpu_process_memory, group_report
from bench.gpu.harness import run_pairs
from bench.gpu.log_figures import rank_figures
from bench.gpu.make_spec import HERE, MULTICAST_OFF, SpecError, build_spec, plan_json
from tests.bench.gpu.plans import stack_plan
from tests.scripts.fakes import Sandbox

FAKE_VLLM = Path(__file__).resolve().parent / "fake_vllm.py"
TOTAL_MIB = 81559
# nvidia-smi for a machine of two GPUs: each `<gpu>-<pid>` file under FAKE_GPU_STATE is a process on that GPU.
NVIDIA_SMI = f"""
state="$FAKE_GPU_STATE"; total={TOTAL_MIB}
gpu_of() {{ for a in "$@"; do case "$prev" in -i) echo "$a"; return ;; esac; prev="$a"; done; }}
used_on() {{ local u=0; for f in "$state"/"$1"-*; do [[ -f $f ]] && u=$((u + $(cat "$f"))); done; echo "$u"; }}
ids=$(gpu_of "$@")
case "$*" in
  topo*) echo "GPU0 X NV18"; echo "GPU1 NV18 X" ;;
  *query-gpu=index,memory.used*) for g in ${{ids//,/ }}; do u=$(used_on "$g"); echo "$g, $u, $((total - u))"; done ;;
  *query-gpu=index*) u=$(used_on "$ids"); echo "$ids, NVIDIA H100 80GB HBM3, 580.159.04, $total, $u, $((total - u))" ;;
  *query-compute-apps*) for f in "$state"/"$ids"-*; do [[ -f $f ]] && echo "${{f##*-}}, python3, $(cat "$f")"; done ;;
  "-i "*) echo "| GPU $ids | $(used_on "$ids")MiB / ${{total}}MiB |" ;;
  *) echo "unexpected: $*" >&2; exit 9 ;;
esac
exit 0
"""


@pytest.fixture(scope="module")
def tp2_plan() -> dict[str, Any]:
    return stack_plan("tp2")


@pytest.fixture(scope="module")
def tp2_run() -> dict[str, Any]:
    return dict(yaml.safe_load((HERE / "runs" / "tp2.yaml").read_text()))


def test_every_server_runs_on_the_gpus_its_plan_placed_it_on(
    tp2_plan: dict[str, Any], tp2_run: dict[str, Any]
) -> None:
    spec = build_spec(tp2_run, {"tp2": tp2_plan})
    servers = spec["servers"]
    group = tp2_plan["pairs"][0]["group"]
    assert [[s["name"] for s in gpu["servers"]] for gpu in group["gpus"]] == [
        ["tp2-embedding", "tp2-llm rank 0"],
        ["tp2-reranker", "tp2-llm rank 1"],
    ]
    assert servers["tp2-embedding"]["env"]["CUDA_VISIBLE_DEVICES"] == "0"
    assert servers["tp2-reranker"]["env"]["CUDA_VISIBLE_DEVICES"] == "1"
    assert servers["tp2-llm"]["env"]["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert all(s["env"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID" for s in servers.values())
    args = servers["tp2-llm"]["args"]
    assert args[args.index("--tensor-parallel-size") + 1] == "2"
    assert spec["gpus"] == [0, 1]
    assert {k: spec["env"][k] for k in MULTICAST_OFF} == MULTICAST_OFF


def test_a_run_on_several_gpus_without_multicast_off_is_refused(
    tp2_plan: dict[str, Any], tp2_run: dict[str, Any]
) -> None:
    with pytest.raises(SpecError, match="NCCL_NVLS_ENABLE: '0'"):
        build_spec({**tp2_run, "env": {}}, {"tp2": tp2_plan})


def test_the_stacks_can_be_planned_for_the_gpu_the_machine_has() -> None:
    plan = plan_json("tp4", gpu="H200")
    assert plan["gpu"]["name"] == "H200" and plan["feasible"], plan["problems"]
    assert plan["pairs"][0]["group"]["tensor_parallel_size"] == 4
    assert stack_plan("tp4", gpu="H200") == plan  # the bench tests' plans, made in-process, are plan_json's


@pytest.mark.parametrize("size", [2, 4, 8])
def test_the_per_rank_non_torch_runs_start_the_llm_alone_on_every_gpu(size: int) -> None:
    run = yaml.safe_load((HERE / "runs" / f"nontorch-tp{size}.yaml").read_text())
    spec = build_spec(run, {f"nontorch-tp{size}": stack_plan(f"nontorch-tp{size}")})
    (llm,) = spec["servers"].values()
    assert llm["env"]["CUDA_VISIBLE_DEVICES"] == ",".join(map(str, range(size)))
    assert spec["gpus"] == list(range(size))


def test_each_ranks_own_log_lines_give_its_figures() -> None:
    log = "\n".join(
        [
            "(Worker_TP0 pid=11) INFO [gpu_worker.py:1] Available KV cache memory: 36.40 GiB",
            "(Worker_PP0_TP1 pid=12) INFO [gpu_worker.py:1] Available KV cache memory: 36.38 GiB",
            "(APIServer pid=10) INFO Available KV cache memory: 99.00 GiB",
        ]
    )
    figures = rank_figures(log)
    assert {rank: f["kv_pool_gib"] for rank, f in figures.items()} == {"rank0": 36.40, "rank1": 36.38}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def two_gpus(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    state = sandbox.root / "gpu-state"
    state.mkdir()
    sandbox.fake("nvidia-smi", NVIDIA_SMI)
    sandbox.fake("vllm", f'exec {sys.executable} {FAKE_VLLM} "$@"\n')
    monkeypatch.setenv("PATH", f"{sandbox.bin}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GPU_STATE", str(state))
    monkeypatch.setenv("FAKE_VLLM_MIB", "3000")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(
        "bench.gpu.harness.model_dirs.write_tokenizer_json", lambda path, *_: path.write_text("{}")
    )
    # A real server takes a minute to start and is asked for /health each second; the fake is up at once.
    monkeypatch.setattr(run_pairs, "wait_ready", functools.partial(run_pairs.wait_ready, poll_s=0.05))
    return sandbox


def test_the_runner_reads_every_gpu_and_the_comparison_sets_each_rank_beside_the_plan(
    two_gpus: Sandbox, tmp_path: Path, tp2_plan: dict[str, Any], tp2_run: dict[str, Any]
) -> None:
    plan = json.loads(json.dumps(tp2_plan))
    for pair in plan["pairs"]:  # the plan's ports, moved to free ones of this machine
        for server in pair["servers"]:
            args = server["vllm_args"]
            args[args.index("--port") + 1] = str(_free_port())
            server["port"] = int(args[args.index("--port") + 1])
    run = {**tp2_run, "actions": [a for a in tp2_run["actions"] if "start" in a]}
    spec = build_spec(run, {"tp2": plan})
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    out = tmp_path / "out"
    assert run_pairs.main([str(spec_path), str(out), "--workdir", str(tmp_path / "work")]) == 0
    records = json.loads((out / "results.json").read_text())["records"]
    assert [(r["server"], r["outcome"]) for r in records if r["action"] == "start"] == [
        ("tp2-embedding", "ready"),
        ("tp2-reranker", "ready"),
        ("tp2-llm", "ready"),
    ]
    assert "NV18" in records[0]["topology"]
    after_llm = next(r for r in records if r.get("label") == "after-start-tp2-llm")
    assert {gpu: r["used_mib"] for gpu, r in after_llm["per_gpu"].items()} == {"0": 6000, "1": 6000}
    memory = gpu_process_memory(records)
    assert memory["tp2-embedding"].keys() == {"0"} and memory["tp2-reranker"].keys() == {"1"}
    assert {gpu: m["after_start"] for gpu, m in memory["tp2-llm"].items()} == {"0": 3000, "1": 3000}
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "tp2-llm.log").write_text((out / "logs" / "tp2-llm.log").read_text())
    process_of = {name: name for name in spec["servers"]}
    rows = group_report(plan["pairs"][0], process_of, memory, logs)
    assert [row["logged_kv_gib"] for row in rows] == [1.75, 1.76]
    assert [row["plan_kv_gib"] for row in rows] == [
        g["servers"][-1]["kv_cache_gib"] for g in plan["pairs"][0]["group"]["gpus"]
    ]
    assert [row["observed_free_mib"] for row in rows] == [TOTAL_MIB - 6000, TOTAL_MIB - 6000]
    assert [[s["after_start_mib"] for s in row["servers"]] for row in rows] == [[3000, 3000], [3000, 3000]]
    assert not list((two_gpus.root / "gpu-state").iterdir())  # everything started was stopped
