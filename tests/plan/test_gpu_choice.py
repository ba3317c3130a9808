"""The stack's GPU: any name nvidia-smi prints, or, for a GPU colo's catalog lacks, its memory."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from colo.catalog import MIB, gpu
from colo.cli import main
from colo.config import parse_stack_config
from colo.errors import ConfigError
from colo.plan.report import plan_view
from colo.plan.stack import Plan, make_plan
from colo.stackfiles import load_stack


def _unnamed_pool(raw: dict[str, Any], **pool: Any) -> None:
    """An existing pool of nodes colo knows nothing about but what the stack says."""
    raw["nodePool"] = {"mode": "existing", "nodeSelector": {"pool": "gpus"}, **pool}
    raw["cluster"]["gpuPairing"] = "dra"


def _plan(**pool: Any) -> Plan:
    raw = copy.deepcopy(load_stack("local").values)
    _unnamed_pool(raw, **pool)
    return make_plan(parse_stack_config(raw))


def test_the_stack_may_name_the_gpu_as_nvidia_smi_prints_it() -> None:
    plan = _plan(gpu="NVIDIA L40S")
    assert plan.feasible, plan.problems
    assert plan.gpu == gpu("L40S")


def test_an_ambiguous_gpu_name_is_refused_at_its_key_with_the_candidates() -> None:
    raw = copy.deepcopy(load_stack("local").values)
    _unnamed_pool(raw, gpu="A100")
    with pytest.raises(ConfigError) as caught:  # an invalid config, before anything is planned
        parse_stack_config(raw)
    message = {p.path: p.message for p in caught.value.problems}["colo:nodePool.gpu"]
    assert "A100-40GB" in message and "A100-80GB" in message


def test_a_gpu_given_by_memory_is_planned_with_the_largest_context_and_says_so() -> None:
    plan = _plan(gpuMemoryMiB=47000, gpuComputeCapability="8.9")
    assert plan.feasible, plan.problems
    assert plan.gpu.cuda_total_bytes == 47000 * MIB and not plan.gpu.from_catalog
    view = plan_view(plan)["gpu"]
    assert view["in_catalog"] is False
    assert "largest in the catalog" in view["assumptions"][0]


def test_the_plan_table_notes_what_was_assumed_about_a_gpu_given_by_memory(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    values = copy.deepcopy(load_stack("local").values)
    _unnamed_pool(values, gpu="RTX 4070 Ti SUPER", gpuMemoryMiB=15948, gpuComputeCapability=8.9)
    path = tmp_path / "Pulumi.custom.yaml"
    path.write_text(yaml.safe_dump({"config": {f"colo:{k}": v for k, v in values.items()}}))
    main(["plan", "--config", str(path)])
    out = capsys.readouterr().out
    assert "GPU RTX 4070 Ti SUPER (15.57 GiB as CUDA reports it)" in out
    assert "note (GPU): GPU not in colo's catalog" in out


def test_a_gpu_memory_below_one_gib_is_refused_at_its_key() -> None:
    raw = copy.deepcopy(load_stack("local").values)
    _unnamed_pool(raw, gpuMemoryMiB=512)
    with pytest.raises(ConfigError) as refused:
        parse_stack_config(raw)
    assert [p.path for p in refused.value.problems] == ["colo:nodePool.gpuMemoryMiB"]


def test_memory_alone_on_an_instance_type_colo_knows_points_to_its_gpu() -> None:
    raw = copy.deepcopy(load_stack("local").values)
    raw["nodePool"] = {**raw["nodePool"], "gpuMemoryMiB": 45000, "gpuComputeCapability": "8.9"}
    del raw["nodePool"]["gpu"]
    plan = make_plan(parse_stack_config(raw))
    message = {p.path: p.message for p in plan.problems}["colo:nodePool.gpuMemoryMiB"]
    assert "g6e.xlarge carries L40S" in message and "nodePool.gpu: L40S" in message


def test_a_gpu_given_by_memory_without_its_compute_capability_is_refused_at_the_gpu_key() -> None:
    raw = copy.deepcopy(load_stack("local").values)
    _unnamed_pool(raw, gpu="Tesla V100", gpuMemoryMiB=32000)
    with pytest.raises(ConfigError) as refused:
        parse_stack_config(raw)
    message = {p.path: p.message for p in refused.value.problems}["colo:nodePool.gpu"]
    assert "'Tesla V100' is not in colo's catalog" in message and "gpuComputeCapability" in message


def test_the_capability_given_decides_the_fp8_layout_instead_of_an_assumed_hopper() -> None:
    """Below 8.9 vLLM runs FP8 weight-only through Marlin, whose scales are model-dtype per output row: the
    same FP8 checkpoint weighs more on an Ampere card than on an Ada one of the same memory."""
    ampere = _plan(gpu="my-ampere", gpuMemoryMiB=46000, gpuComputeCapability="8.6")
    ada = _plan(gpu="my-ada", gpuMemoryMiB=46000, gpuComputeCapability="8.9")
    assert ampere.gpu.compute_capability == (8, 6) and ada.gpu.compute_capability == (8, 9)
    assert "compute capability 8.6 as given" in ampere.gpu.assumptions[0]
    assert "9.0" not in ampere.gpu.assumptions[0]


def test_a_catalog_gpu_whose_stated_capability_differs_is_refused() -> None:
    raw = copy.deepcopy(load_stack("local").values)
    _unnamed_pool(raw, gpu="L40S", gpuComputeCapability="9.0")
    with pytest.raises(ConfigError) as refused:
        parse_stack_config(raw)
    message = {p.path: p.message for p in refused.value.problems}["colo:nodePool.gpu"]
    assert "compute capability 8.9" in message and "not 9.0" in message


def test_an_instance_type_whose_gpu_contradicts_an_unknown_gpu_given_by_memory_is_questioned() -> None:
    raw = copy.deepcopy(load_stack("local").values)
    raw["nodePool"] = {
        **raw["nodePool"],
        "instanceType": "g6e.xlarge",
        "gpu": "Tesla V100",
        "gpuMemoryMiB": 32000,
        "gpuComputeCapability": "7.0",
    }
    plan = make_plan(parse_stack_config(raw))
    message = {p.path: p.message for p in plan.problems}["colo:nodePool.gpu"]
    assert "g6e.xlarge carries L40S GPUs" in message and "'Tesla V100'" in message
