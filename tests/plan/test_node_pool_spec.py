from __future__ import annotations

from dataclasses import replace

import pytest

from colo.catalog import gpu
from colo.cli.common import load_config
from colo.config import StackConfig
from colo.plan.instance_check import ReportedGpus, gpu_mismatch_problems
from colo.plan.node_pool import MIN_VOLUME_GIB, derived_volume_gib, node_pool_spec
from colo.plan.stack import make_plan
from colo.stackfiles import load_stack


def _prod(**pool: object) -> StackConfig:
    config = load_config(load_stack("prod"))
    return config.model_copy(update={"node_pool": config.node_pool.model_copy(update=pool)})


def test_the_image_volume_grows_with_the_weights_on_the_busiest_node() -> None:
    three_on_one = make_plan(_prod())
    one_each = make_plan(_prod(instance_type="g6e.xlarge", max_nodes=None))
    assert derived_volume_gib(three_on_one) > derived_volume_gib(one_each) >= MIN_VOLUME_GIB
    assert derived_volume_gib(three_on_one) % 10 == 0


def test_a_small_pair_still_gets_the_minimum_volume() -> None:
    config = load_config(load_stack("dev"))
    assert derived_volume_gib(make_plan(config)) == MIN_VOLUME_GIB


def test_the_pool_never_shrinks_below_the_planned_nodes() -> None:
    config = _prod(instance_type="g6e.xlarge", max_nodes=6)
    spec = node_pool_spec(config, make_plan(config))
    assert (spec.min_size, spec.desired_size, spec.max_size) == (4, 4, 6)


L40S_X4 = ReportedGpus("g6e.12xlarge", "L40S", 4, 45776)


def test_the_gpu_ec2_reports_matching_the_catalog_is_no_problem() -> None:
    assert gpu_mismatch_problems(gpu("L40S"), 4, L40S_X4) == []


def test_an_a100_matches_the_catalog_entry_of_its_memory_size() -> None:
    reported = ReportedGpus("p4de.24xlarge", "A100", 8, 81920)
    assert gpu_mismatch_problems(gpu("A100-80GB"), 8, reported) == []
    assert [p.path for p in gpu_mismatch_problems(gpu("A100-40GB"), 8, reported)] == ["colo:nodePool.gpu"]


@pytest.mark.parametrize(
    ("reported", "path", "words"),
    [
        (replace(L40S_X4, name="L4"), "colo:nodePool.gpu", "carries L4 GPUs"),
        (replace(L40S_X4, count=8), "colo:nodePool.instanceType", "has 8 GPUs"),
        (replace(L40S_X4, memory_mib=46068), "colo:nodePool.gpu", "46068 MiB"),
        (ReportedGpus("m5.large", None, 0, None), "colo:nodePool.instanceType", "no whole GPU"),
    ],
)
def test_each_disagreement_with_ec2_names_the_setting_to_fix(
    reported: ReportedGpus, path: str, words: str
) -> None:
    problems = gpu_mismatch_problems(gpu("L40S"), 4, reported)
    assert path in [p.path for p in problems]
    assert any(words in p.message for p in problems)
