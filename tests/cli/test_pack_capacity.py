"""`colo pack --node-pool-mode`: a stack whose GPU nodes Karpenter or EKS Auto Mode launch, written as `colo plan`
accepts it, and a mode the stack's settings rule out refused before any search."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from colo.cli import main
from colo.cli.common import ExitCode

MODELS = {
    "region": "us-east-1",
    "llms": [
        {
            "name": "qwen27b",
            "model": "Qwen/Qwen3.6-27B-FP8",
            "maxModelLen": 32768,
            "minConcurrency": 1,
            "vllm": {"version": "0.20.2"},
        }
    ],
    "embeddings": [
        {
            "model": "Qwen/Qwen3-Embedding-0.6B",
            "maxModelLen": 8192,
            "minConcurrency": 2,
            "vllm": {"version": "0.20.2"},
        }
    ],
}


def models_file(tmp_path: Path, **stack: object) -> str:
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({**MODELS, "stack": stack} if stack else MODELS))
    return str(path)


def test_a_karpenter_stack_is_written_that_colo_plan_accepts_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "Pulumi.packed.yaml"
    models = models_file(tmp_path, cluster={"name": "colo-gpu"})
    args = ["pack", "--models", models, "--alternatives", "0", "--node-pool-mode", "karpenter"]
    assert main([*args, "--write", str(target)]) == ExitCode.OK
    written = yaml.safe_load(target.read_text())["config"]["colo:nodePool"]
    assert written["mode"] == "karpenter"
    capsys.readouterr()
    assert main(["plan", "--config", str(target)]) == ExitCode.OK
    # the instance type pack priced is the one Karpenter may launch
    assert (
        f"launches NodePool colo-gpu: one of {written['instanceType']} (1 x L40S each)"
        in capsys.readouterr().out
    )


def test_an_auto_mode_stack_with_a_pairing_auto_mode_cannot_run_is_refused_before_the_search(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "Pulumi.packed.yaml"
    models = models_file(tmp_path, cluster={"name": "colo-auto"})
    code = main(["pack", "--models", models, "--node-pool-mode", "auto", "--write", str(target)])
    assert code == ExitCode.INVALID
    err = capsys.readouterr().err
    assert "--node-pool-mode: auto: colo:cluster.gpuPairing: EKS Auto Mode" in err
    assert not target.exists()


def test_a_mode_that_needs_the_cluster_name_says_where_to_give_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["pack", "--models", models_file(tmp_path), "--node-pool-mode", "karpenter"]) == ExitCode.INVALID
    )
    assert (
        "karpenter needs the EKS cluster's name: give cluster.name under `stack:`" in capsys.readouterr().err
    )
