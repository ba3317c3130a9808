"""colo/vllm/rules.yaml against the typed rules: every field in every range, nothing unknown, every range cited."""

from __future__ import annotations

import copy
from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from colo.catalog.data import parse_yaml
from colo.vllm.rules import (
    MeasuredConstants,
    VllmRules,
    VllmRulesFileError,
    first_release_where,
    newest_range_from,
    parse_rules,
    pp_placed_architectures,
    release_key,
    rules_for,
    same_release,
    supports_pipeline_parallel,
)
from colo.vllm.serve_cli import serve_tables
from tests.vllm.helpers import process


def _raw() -> dict[str, Any]:
    text = resources.files("colo.vllm").joinpath("rules.yaml").read_text()
    data: dict[str, Any] = parse_yaml(text)
    return data


def test_every_range_states_every_rule_field_after_inheritance_and_cites_its_source() -> None:
    fields = set(VllmRules.model_fields)
    for entry in _raw()["releases"]:
        label = f"{entry['first']}-{entry['last']}"
        assert set(entry) == fields, f"{label}: {sorted(set(entry) ^ fields)}"
        assert str(entry["source"]).strip(), f"{label} names no source"


def test_constants_state_every_field_and_nothing_else() -> None:
    assert set(_raw()["constants"]) == set(MeasuredConstants.model_fields)


def test_an_unknown_rule_key_is_refused_naming_the_key_and_the_range() -> None:
    data = _raw()
    data["releases"][3]["sliding_window_doubles"] = True
    with pytest.raises(
        VllmRulesFileError, match=r"releases 0\.8\.3-0\.8\.3: unknown key 'sliding_window_doubles'"
    ):
        parse_rules(data)


def test_a_missing_rule_key_is_refused_naming_the_key_and_the_range() -> None:
    data = _raw()
    del data["releases"][0]["null_block_reserved"]
    with pytest.raises(
        VllmRulesFileError, match=r"releases 0\.8\.0-0\.8\.0: missing key 'null_block_reserved'"
    ):
        parse_rules(data)


def test_a_wrongly_typed_rule_value_is_refused_naming_the_key() -> None:
    data = _raw()
    data["releases"][0]["capture_rule"] = "step4"
    with pytest.raises(VllmRulesFileError, match=r"0\.8\.0-0\.8\.0: 'capture_rule'"):
        parse_rules(data)


def test_unknown_and_missing_constants_are_refused() -> None:
    data = _raw()
    data["constants"]["graph_kib"] = 1
    with pytest.raises(VllmRulesFileError, match=r"constants: unknown key 'graph_kib'"):
        parse_rules(data)
    data = _raw()
    del data["constants"]["post_profile_mib"]
    with pytest.raises(VllmRulesFileError, match=r"constants: missing key 'post_profile_mib'"):
        parse_rules(data)


def test_overlapping_ranges_are_refused() -> None:
    data = _raw()
    overlapping = copy.deepcopy(next(r for r in data["releases"] if r["first"] == "0.12.0"))
    overlapping["first"] = "0.11.2"  # inside 0.11.1-0.11.2
    data["releases"].append(overlapping)
    with pytest.raises(VllmRulesFileError, match="overlap"):
        parse_rules(data)


def test_batch_tiers_must_end_with_one_for_every_gpu() -> None:
    data = _raw()
    data["releases"][0]["batch_tiers"] = data["releases"][0]["batch_tiers"][:1]
    with pytest.raises(VllmRulesFileError, match="batch_tiers must end with a tier for every GPU"):
        parse_rules(data)


def test_a_release_number_that_is_not_one_is_refused_plainly() -> None:
    with pytest.raises(ValueError, match="'latest' is not a vLLM release number"):
        rules_for("latest")
    for build in ("0.12.0rc1", "0.11.1.dev5", "0.11.0+cu130"):  # no release's rules describe a build
        with pytest.raises(ValueError, match="is not a vLLM release number"):
            rules_for(build)


def test_patch_releases_follow_their_range_and_the_newest_minor_accepts_patches() -> None:
    assert rules_for("0.13.5").first == "0.13.0"
    assert rules_for("0.11.0.post1").first == "0.11.0"
    assert rules_for("0.33.1").first == "0.33.0"


def test_first_release_where_names_the_release_a_rule_starts_in() -> None:
    assert first_release_where(lambda r: r.has_kv_cache_memory_bytes) == "0.10.2"
    assert first_release_where(lambda r: r.uuid_in_cuda_visible_devices) == "0.24.0"


def test_a100s_keep_the_small_batch_defaults_despite_their_memory() -> None:
    a100 = process("Qwen/Qwen3-8B", "A100-80GB", "0.27.1").limits
    h100 = process("Qwen/Qwen3-8B", "H100-SXM", "0.27.1").limits
    assert (a100.max_num_batched_tokens, a100.max_num_seqs) == (2048, 256)
    assert (h100.max_num_batched_tokens, h100.max_num_seqs) == (8192, 1024)


def test_the_a100_exception_is_by_name_so_the_80_gb_a800_takes_the_large_defaults() -> None:
    """get_batch_defaults tests `"a100" not in device_name` (vllm 0.13.0 engine/arg_utils.py): the same
    compute-capability-8.0 board sold as the A800 is not excluded."""
    a800 = process("Qwen/Qwen3-8B", "A800-80GB", "0.13.0").limits
    assert (a800.max_num_batched_tokens, a800.max_num_seqs) == (8192, 1024)


@pytest.mark.parametrize(
    ("version", "architecture", "moe", "quantized", "hybrid", "v2"),
    [
        ("0.21.0", "Qwen3ForCausalLM", False, False, False, False),  # V1 everywhere before 0.22
        ("0.22.0", "Qwen3ForCausalLM", False, False, False, True),
        ("0.22.0", "Qwen3ForCausalLM", False, True, False, False),  # quantized stays on V1
        ("0.23.0", "LlamaForCausalLM", False, False, False, True),
        ("0.24.0", "Qwen2MoeForCausalLM", True, True, False, True),  # listed: MoE and quantized allowed
        ("0.24.0", "Gemma3ForCausalLM", False, False, False, False),
        ("0.25.0", "Gemma3ForCausalLM", False, False, False, True),  # every dense text model
        ("0.25.0", "Qwen3MoeForCausalLM", True, False, False, False),  # unlisted MoE stays on V1
        ("0.25.0", "Qwen3_5ForConditionalGeneration", False, False, True, False),  # hybrid stays on V1
        ("0.29.0", "Qwen3_5ForConditionalGeneration", False, False, True, True),  # V2 for everything
    ],
)
def test_the_v2_model_runner_default_follows_each_release(
    version: str, architecture: str, moe: bool, quantized: bool, hybrid: bool, v2: bool
) -> None:
    rules = rules_for(version)
    assert (
        rules.runs_v2_model_runner(
            architecture=architecture, generate=True, moe=moe, hybrid=hybrid, quantized=quantized
        )
        is v2
    )


def test_pooling_models_stay_on_v1_until_every_model_runs_v2() -> None:
    for version, v2 in (("0.27.1", False), ("0.29.0", True)):
        rules = rules_for(version)
        assert (
            rules.runs_v2_model_runner(
                architecture="Qwen3ForCausalLM", generate=False, moe=False, hybrid=False, quantized=False
            )
            is v2
        )


def test_only_the_rules_module_parses_or_compares_release_numbers() -> None:
    """Every table keyed by release (quantization names, argument spellings, verify's release check) asks the
    rules module to order or compare versions, which orders them by the catalog's release_key (below the memory
    model, for the image catalog too); no other module of colo reads version numbers itself."""
    package = Path(__file__).resolve().parents[2] / "colo"
    readers = {
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if "packaging.version" in path.read_text() or "packaging import version" in path.read_text()
    }
    assert readers == {"vllm/rules.py", "catalog/releases.py"}


def test_a_release_falls_in_the_newest_range_that_starts_at_or_before_it() -> None:
    firsts = ["0.8.0", "0.9.1", "0.20.1"]
    assert newest_range_from("0.9.0.1", firsts) == 0
    assert newest_range_from("0.9.1", firsts) == 1
    assert newest_range_from("0.20.2rc1.dev129+g1acd67a79", firsts) == 2  # a dev build counts as its release
    assert newest_range_from("0.7.3", firsts) == 0
    assert same_release("0.20.2", "0.20.2rc1.dev129") and not same_release("0.20.1", "0.20.2")


def test_every_architecture_without_pp_support_is_listed_over_releases_colo_mirrors_in_order() -> None:
    data = parse_yaml(resources.files("colo.vllm").joinpath("pp_support.yaml").read_text())
    assert str(data["source"]).strip()
    # the release-keyed tables are extended together, the rules' range for a new release with them or after
    first, last = rules_for("0.8.0").first, serve_tables()[-1].last
    for architecture, ranges in data["unsupported"].items():
        keys = [(release_key(a), release_key(b)) for a, b in ranges]
        assert all(release_key(first) <= a <= b <= release_key(last) for a, b in keys), architecture
        assert all(earlier[1] < later[0] for earlier, later in pairwise(keys)), architecture


def test_every_architecture_colo_places_at_pp_implements_supports_pp_in_the_newest_release() -> None:
    for architecture in pp_placed_architectures():
        assert supports_pipeline_parallel(architecture, "0.33.0"), architecture
