"""Which architectures each vLLM release registers, and what it says for one it does not (colo/vllm/architectures.yaml,
read from every mirrored release's model_executor/models/registry.py)."""

from __future__ import annotations

import copy
import importlib.util
import itertools
import json
import sys
from collections.abc import Iterator
from importlib import resources
from types import ModuleType
from typing import Any

import pytest

from colo.catalog.data import parse_yaml
from colo.vllm import architectures as arch
from colo.vllm.architectures import (
    ArchitecturesFileError,
    architecture_refusal,
    first_release_knowing,
    implementation,
    parse_architectures,
    registry_for,
    releases_knowing,
    render,
    texts_for,
)
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.rules import release_key
from colo.vllm.rules import releases as rules_ranges
from tests.paths import REPO_ROOT

HUB_FILES = REPO_ROOT / "tests" / "hub_files"
LLM_ROLES = {"llm", "llms"}
POOLING_ROLES = {"embedding", "embeddings", "reranker", "rerankers"}


def _raw() -> dict[str, Any]:
    data: dict[str, Any] = parse_yaml(resources.files("colo.vllm").joinpath("architectures.yaml").read_text())
    return data


NEWEST = str(list(_raw()["sdists"])[-1])  # the newest release whose registry was read


def refusal(
    version: str, *names: str, pooling: bool = False, auto_map: bool = False, trust: bool = False
) -> Any:
    return architecture_refusal(
        version,
        list(names),
        has_auto_map=auto_map,
        trust_remote_code=trust,
        pooling=pooling,
        model="org/model",
    )


# --------------------------------------------------------------------------- the data file


def test_the_ranges_cover_every_mirrored_release_from_the_first_to_the_last_without_gaps() -> None:
    data = _raw()
    for section in ("registry", "wording", "fallback"):
        entries = data[section]
        assert str(entries[0]["first"]) == rules_ranges()[0].first, section
        # a new release is read here as it is added, before (or with) its memory rules
        assert release_key(str(entries[-1]["last"])) >= release_key(rules_ranges()[-1].last), section
        assert str(entries[-1]["last"]) == NEWEST, section
        listed = [str(v) for v in data["sdists"]]
        for earlier, later in itertools.pairwise(entries):
            # the next range starts at the sdist right after the previous range's last
            assert listed.index(str(later["first"])) == listed.index(str(earlier["last"])) + 1, section


def test_every_range_of_colo_s_rules_starts_at_a_release_whose_registry_was_read() -> None:
    data = _raw()
    read = {str(v) for v in data["sdists"]}
    for rules in rules_ranges():
        assert rules.first in read, rules.label
        assert rules.last in read, rules.label


def test_every_range_cites_the_release_file_and_symbol_it_was_read_from() -> None:
    data = _raw()
    for section in ("registry", "removed", "wording", "fallback"):
        for entry in data[section]:
            source = str(entry["source"])
            assert source.startswith(f"vllm {entry['first']} vllm/"), (section, entry["first"])
            assert "::" in source, (section, entry["first"])


def test_releases_without_an_sdist_are_named_and_read_as_the_release_before_them() -> None:
    assert arch.wheel_only_releases() == {"0.15.0": "0.14.1", "0.15.1": "0.14.1"}
    assert registry_for("0.15.1") == registry_for("0.14.1")
    added_in_016 = registry_for("0.16.0").names["generate"] - registry_for("0.14.1").names["generate"]
    assert added_in_016
    for name in sorted(added_in_016):
        refused = refusal("0.15.0", name)
        assert refused is not None and refused.key == "vllm.version", name


def test_a_later_range_that_removes_a_name_it_never_had_is_refused_naming_the_range() -> None:
    data = copy.deepcopy(_raw())
    data["registry"][1]["removed"] = {"generate": ["NoSuchForCausalLM"]}
    with pytest.raises(ArchitecturesFileError, match=r"0\.8\.2: removes unlisted NoSuchForCausalLM"):
        parse_architectures(data)


def test_an_unknown_kind_is_refused_naming_the_range() -> None:
    data = copy.deepcopy(_raw())
    data["registry"][1]["added"] = {"decoder": ["X"]}
    with pytest.raises(ArchitecturesFileError, match=r"0\.8\.2: unknown kind 'decoder'"):
        parse_architectures(data)


def test_a_release_outside_the_mirrored_ones_is_refused_as_the_rules_refuse_it() -> None:
    with pytest.raises(ValueError, match=r"older than 0\.8\.0"):
        registry_for("0.7.3")
    with pytest.raises(ValueError, match=r"newer than .* the newest release whose memory rules colo mirrors"):
        refusal("0.99.0", "LlamaForCausalLM")


def test_every_message_template_renders_with_the_values_colo_gives_it() -> None:
    for entry in _raw()["wording"]:
        version = str(entry["first"])
        registry = registry_for(version)
        values = arch._values(["X"], registry, {"previous_version": "0.1.0", "plugin_url": "https://example"})
        for key, text in entry.items():
            if key in ("first", "last", "source"):
                continue
            rendered = render(str(text), values)
            assert "{" not in rendered, (version, key, rendered)


def test_render_names_a_placeholder_it_has_no_value_for() -> None:
    with pytest.raises(KeyError, match="model_arch"):
        render("Model {model_arch} is odd", {"arch": "X"})


# --------------------------------------------------------------------------- release boundaries

# (architecture, newest release that lacks it, oldest that registers it): each read in the two releases'
# registry.py. These are the architectures of colo's catalog and of tests/hub_files whose first release is
# after 0.8.0.
ADDED = [
    ("Mistral3ForConditionalGeneration", "0.8.2", "0.8.3"),
    ("Qwen3ForCausalLM", "0.8.3", "0.8.4"),
    ("Qwen3MoeForCausalLM", "0.8.3", "0.8.4"),
    ("Exaone4ForCausalLM", "0.9.2", "0.10.0"),
    ("VoxtralForConditionalGeneration", "0.9.2", "0.10.0"),
    ("SmolLM3ForCausalLM", "0.10.0", "0.10.1"),
    ("GptOssForCausalLM", "0.10.0", "0.10.1"),
    ("Olmo3ForCausalLM", "0.10.2", "0.11.0"),
    ("Lfm2VlForConditionalGeneration", "0.13.0", "0.14.0"),
    ("Qwen3_5ForConditionalGeneration", "0.16.0", "0.17.0"),
    ("Qwen3_5MoeForConditionalGeneration", "0.16.0", "0.17.0"),
    ("Gemma4ForConditionalGeneration", "0.18.1", "0.19.0"),
    ("Ministral3ForCausalLM", "0.19.1", "0.20.0"),
]


@pytest.mark.parametrize(("name", "lacking", "first"), ADDED)
def test_an_architecture_is_refused_before_the_release_that_registers_it_and_served_from_it(
    name: str, lacking: str, first: str
) -> None:
    refused = refusal(lacking, name)
    assert refused is not None and refused.key == "vllm.version"
    assert f"the first is {first}" in refused.message
    assert refusal(first, name) is None
    assert first_release_knowing(name) == first


@pytest.mark.parametrize(
    ("name", "last", "gone", "said"),
    [
        ("MllamaForConditionalGeneration", "0.10.2", "0.11.0", "was supported in vLLM until v0.10.2"),
        ("QWenLMHeadModel", "0.23.0", "0.24.0", "was supported in vLLM until v0.23.0"),
        ("Phi3SmallForCausalLM", "0.9.2", "0.10.0", "was supported in vLLM until version 0.9.2"),
    ],
)
def test_an_architecture_vllm_dropped_is_refused_after_its_last_release_in_vllm_s_words(
    name: str, last: str, gone: str, said: str
) -> None:
    assert refusal(last, name) is None
    refused = refusal(gone, name)
    assert refused is not None and refused.key == "vllm.version"
    assert said in refused.message
    assert releases_knowing(name)[-1][1] == last


def test_the_transformers_backend_serves_names_vllm_moved_out_of_its_own_code() -> None:
    assert implementation("0.28.0", "Olmo3ForCausalLM") == "vllm"
    assert implementation("0.29.0", "Olmo3ForCausalLM") == "transformers"
    assert implementation("0.31.0", "PhiForCausalLM") == "vllm"
    assert implementation("0.32.0", "PhiForCausalLM") == "transformers"
    assert implementation("0.10.1", "SmolLM3ForCausalLM") == "transformers"
    assert implementation("0.33.0", "QWenLMHeadModel") is None
    assert refusal("0.33.0", "Olmo3ForCausalLM") is None  # registered, by the backend


# --------------------------------------------------------------------------- catalog models at their pins


def _pins(node: Any, role: str | None = None) -> Iterator[tuple[str, str, str]]:
    """(model, vLLM version, role) of every server a stack or pack file declares."""
    if isinstance(node, dict):
        if "model" in node and isinstance(node.get("vllm"), dict) and role is not None:
            yield str(node["model"]), str(node["vllm"]["version"]), role
        for key, value in node.items():
            yield from _pins(value, key if key in LLM_ROLES | POOLING_ROLES else role)
    elif isinstance(node, list):
        for item in node:
            yield from _pins(item, role)


def _pinned_servers() -> list[tuple[str, str, str, str]]:
    servers = []
    for path in sorted([*REPO_ROOT.glob("stacks/*.yaml"), *REPO_ROOT.glob("packs/*.yaml")]):
        for model, version, role in _pins(parse_yaml(path.read_text())):
            servers.append((path.name, model, version, role))
    return sorted(set(servers))


def test_the_stack_and_pack_files_pin_servers_of_both_roles() -> None:
    roles = {role for _file, _model, _version, role in _pinned_servers()}
    assert roles & LLM_ROLES and roles & POOLING_ROLES


@pytest.mark.parametrize(("file", "model", "version", "role"), _pinned_servers())
def test_every_catalog_model_is_served_at_the_release_its_stack_or_pack_pins(
    file: str, model: str, version: str, role: str
) -> None:
    name = catalog_architecture(model).architecture
    assert refusal(version, name, pooling=role in POOLING_ROLES) is None, (file, model, version, name)


# --------------------------------------------------------------------------- vLLM's words, range by range


def test_an_unregistered_name_before_0_8_5_fails_in_the_loader_s_transformers_fallback() -> None:
    refused = refusal("0.8.0", "Exaone4ForCausalLM")
    assert refused is not None
    assert (
        "ValueError: Exaone4ForCausalLM has no vLLM implementation and the Transformers implementation is not "
        "compatible with vLLM. Try setting VLLM_USE_V1=0." in refused.message
    )
    assert refused.message.endswith(
        f"[fix: pin a vLLM release that registers Exaone4ForCausalLM (0.10.0 to {NEWEST}); the first is 0.10.0]"
    )


def test_from_0_8_5_to_0_10_0_the_loader_cannot_find_the_model_module() -> None:
    for version in ("0.8.5", "0.9.2"):
        refused = refusal(version, "Exaone4ForCausalLM")
        assert refused is not None
        assert (
            "ValueError: Cannot find model module. 'Exaone4ForCausalLM' is not a registered model in the "
            "Transformers library (only relevant if the model is meant to be in Transformers) and 'AutoModel' is "
            "not present in the model config's 'auto_map' (relevant if the model is custom)."
            in refused.message
        ), version
    assert "Cannot find model module. 'Olmo3ForCausalLM'" in refusal("0.10.0", "Olmo3ForCausalLM").message


def test_from_0_10_1_the_registry_says_the_architectures_are_not_supported_for_now() -> None:
    refused = refusal("0.10.1", "Olmo3ForCausalLM")
    assert refused is not None
    size = registry_for("0.10.1").size
    assert (
        "ValueError: Model architectures ['Olmo3ForCausalLM'] are not supported for now. Supported architectures: "
        f"dict_keys([...]) ({size} names in vLLM 0.10.1-0.10.1.1)" in refused.message
    )
    assert "Transformers backend (model_impl auto) first looks for transformers' own Olmo3ForCausalLM" in (
        refused.message
    )


def test_from_0_19_a_name_moved_to_a_plugin_is_refused_with_the_plugin_s_address() -> None:
    assert "was supported in vLLM until v0.10.2" in refusal("0.18.1", "BartForConditionalGeneration").message
    refused = refusal("0.19.0", "BartForConditionalGeneration")
    assert refused is not None
    assert (
        "ValueError: Model architecture BartForConditionalGeneration is not supported in-tree anymore. Please "
        "install the plugin at https://github.com/vllm-project/bart-plugin if you want to use this model "
        "architecture." in refused.message
    )


def test_a_name_no_mirrored_release_registers_points_at_the_model_not_the_release() -> None:
    refused = refusal("0.20.2", "NoSuchModelForCausalLM")
    assert refused is not None and refused.key == "model"
    assert "no vLLM release colo mirrors registers NoSuchModelForCausalLM" in refused.message


def test_a_config_without_architectures_is_refused() -> None:
    refused = refusal("0.20.2")
    assert refused is not None and refused.key == "model"
    assert "No model architectures are specified" in refused.message


def test_the_first_registered_name_in_config_order_is_the_one_served() -> None:
    assert refusal("0.20.2", "NoSuchModelForCausalLM", "LlamaForCausalLM") is None


# --------------------------------------------------------------------------- remote code


def test_remote_code_without_trust_before_transformers_4_52_gets_vllm_s_own_message() -> None:
    refused = refusal("0.9.2", "MyCustomForCausalLM", auto_map=True)
    assert refused is not None and refused.key == "trustRemoteCode"
    assert (
        "RuntimeError: Failed to load the model config. If the model is a custom model not yet available in the "
        "HuggingFace transformers library, consider setting `trust_remote_code=True` in LLM or using the "
        "`--trust-remote-code` flag in the CLI." in refused.message
    )
    assert "[fix: trustRemoteCode: true" in refused.message


def test_remote_code_without_trust_from_0_10_gets_transformers_message_passed_on() -> None:
    refused = refusal("0.20.2", "MyCustomForCausalLM", auto_map=True)
    assert refused is not None and refused.key == "trustRemoteCode"
    assert (
        "ValueError: The repository org/model contains custom code which must be executed" in refused.message
    )
    assert "Failed to load the model config" not in refused.message


def test_remote_code_with_trust_is_left_to_vllm_s_transformers_backend() -> None:
    assert refusal("0.20.2", "MyCustomForCausalLM", auto_map=True, trust=True) is None


def test_an_auto_map_beside_a_registered_architecture_needs_no_trust() -> None:
    # microsoft/phi-1 and NovaSearch/stella_en_1.5B_v5 carry auto_map; vLLM serves their architectures itself
    assert refusal("0.20.2", "PhiForCausalLM", auto_map=True) is None
    assert refusal("0.20.2", "Qwen2ForCausalLM", auto_map=True, pooling=True) is None


# --------------------------------------------------------------------------- roles


def test_a_pooling_only_architecture_cannot_be_the_llm_but_can_embed() -> None:
    refused = refusal("0.20.2", "XLMRobertaModel")
    assert refused is not None and refused.key == "model"
    assert "registers XLMRobertaModel as a pooling model only" in refused.message
    assert refusal("0.20.2", "XLMRobertaModel", pooling=True) is None
    assert refusal("0.8.0", "BertModel") is not None


def test_a_generative_architecture_can_serve_as_a_pooling_model() -> None:
    for version in ("0.8.4", "0.10.0", "0.20.2", "0.33.0"):
        assert refusal(version, "Qwen3ForCausalLM", pooling=True) is None, version


def test_a_pooling_name_that_maps_to_a_generative_class_can_still_generate() -> None:
    # vllm 0.20.2 registry.py: "Gemma2Model": ("gemma2", "Gemma2ForCausalLM") in _EMBEDDING_MODELS only
    assert "Gemma2Model" in registry_for("0.20.2").names["pooling"]
    assert "Gemma2Model" not in registry_for("0.20.2").names["pooling_only"]
    assert refusal("0.20.2", "Gemma2Model") is None


def test_a_sequence_classifier_resolves_to_its_causal_lm_for_a_pooling_server_from_0_10() -> None:
    assert refusal("0.9.2", "Qwen3ForSequenceClassification", pooling=True) is None  # registered until 0.9.2
    assert "Qwen3ForSequenceClassification" not in registry_for("0.10.0").names["pooling"]
    assert refusal("0.10.0", "Qwen3ForSequenceClassification", pooling=True) is None
    assert refusal("0.20.2", "Qwen3ForSequenceClassification", pooling=True) is None
    llm = refusal("0.20.2", "Qwen3ForSequenceClassification")
    assert llm is not None and "as a pooling model only" in llm.message


def test_a_speculative_draft_is_not_served_on_its_own() -> None:
    for version, name in (("0.8.0", "EAGLEModel"), ("0.20.2", "Eagle3LlamaForCausalLM")):
        refused = refusal(version, name)
        assert refused is not None and refused.key == "model", name
        assert f"registers {name} only as a speculative-decoding draft" in refused.message


# --------------------------------------------------------------------------- the public repositories


def _hub_configs() -> list[tuple[str, list[str], bool]]:
    configs = []
    for path in sorted(HUB_FILES.glob("*/*/config.json")):
        config = json.loads(path.read_text())
        configs.append(
            (f"{path.parent.parent.name}/{path.parent.name}", config["architectures"], "auto_map" in config)
        )
    return configs


# The oldest mirrored release whose registry has each repository's architectures[0] (None: none after it).
HUB_FIRST_RELEASE = {
    "HuggingFaceTB/SmolLM3-3B": "0.10.1",
    "LGAI-EXAONE/EXAONE-4.0-32B": "0.10.0",
    "LiquidAI/LFM2.5-VL-1.6B": "0.14.0",
    "NovaSearch/stella_en_1.5B_v5": "0.8.0",
    "Qwen/Qwen-VL-Chat-Int4": "0.8.0",
    "Qwen/Qwen2.5-VL-7B-Instruct": "0.8.0",
    "Qwen/Qwen3-Embedding-4B": "0.8.4",
    "Qwen/Qwen3.5-9B": "0.17.0",
    "TheBloke/Wizard-Vicuna-30B-Uncensored-GPTQ": "0.8.0",
    "TheBloke/Wizard-Vicuna-30B-Uncensored-GPTQ@gptq-8bit-128g-actorder_False": "0.8.0",
    "allenai/Olmo-3.1-32B-Instruct": "0.11.0",
    "allenai/olmOCR-2-7B-1025": "0.8.0",
    "alpindale/WizardLM-2-8x22B": "0.8.0",
    "cognitivecomputations/dolphin-2.5-mixtral-8x7b": "0.8.0",
    "codellama/CodeLlama-7b-hf": "0.8.0",
    "google/gemma-2-9b-it": "0.8.0",
    "google/gemma-3-4b-it": "0.8.0",
    "google/medgemma-27b-it": "0.8.0",
    "humain-ai/ALLaM-7B-Instruct-preview": "0.8.0",
    "ibm-granite/granite-3.1-1b-a400m-instruct": "0.8.0",
    "ibm-granite/granite-3.3-8b-instruct": "0.8.0",
    "ibm-granite/granite-3b-code-instruct-128k": "0.8.0",
    "mattshumer/Reflection-Llama-3.1-70B": "0.8.0",
    "meta-llama/Llama-2-7b-hf": "0.8.0",
    "meta-llama/Llama-3.1-70B-Instruct": "0.8.0",
    "meta-llama/Llama-3.2-1B-Instruct": "0.8.0",
    "meta-llama/Llama-3.2-3B-Instruct": "0.8.0",
    "meta-llama/Llama-3.2-90B-Vision-Instruct": "0.8.0",
    "microsoft/phi-1": "0.8.0",
    "microsoft/phi-2": "0.8.0",
    "microsoft/phi-4": "0.8.0",
    "mistralai/Devstral-2-123B-Instruct-2512": "0.20.0",
    "mistralai/Devstral-Small-2-24B-Instruct-2512": "0.8.3",
    "mistralai/Mixtral-8x7B-Instruct-v0.1": "0.8.0",
    "mistralai/Mixtral-8x7B-v0.1": "0.8.0",
    "mistralai/Voxtral-Mini-3B-2507": "0.10.0",
}
# Architectures vLLM later dropped: the last release that has them.
HUB_LAST_RELEASE = {"Qwen/Qwen-VL-Chat-Int4": "0.23.0", "meta-llama/Llama-3.2-90B-Vision-Instruct": "0.10.2"}


def test_the_table_names_every_public_repository_under_hub_files() -> None:
    assert {repo for repo, _names, _auto in _hub_configs()} == set(HUB_FIRST_RELEASE)


@pytest.mark.parametrize(("repo", "names", "auto_map"), _hub_configs())
def test_each_public_repository_is_served_from_its_first_release_and_refused_before(
    repo: str, names: list[str], auto_map: bool
) -> None:
    first = HUB_FIRST_RELEASE[repo]
    assert first_release_knowing(names[0]) == first
    pooling = "Embedding" in repo or "stella" in repo
    assert refusal(first, *names, pooling=pooling, auto_map=auto_map) is None
    windows = releases_knowing(names[0])
    assert windows[-1][1] == HUB_LAST_RELEASE.get(repo, NEWEST)
    if first != "0.8.0":
        read = [str(version) for version in _raw()["sdists"]]
        before = read[read.index(first) - 1]
        assert refusal(before, *names, pooling=pooling, auto_map=auto_map) is not None, before


# --------------------------------------------------------------------------- the extraction script


def _script() -> ModuleType:
    path = REPO_ROOT / "scripts" / "extract-vllm-architectures.py"
    spec = importlib.util.spec_from_file_location("extract_vllm_architectures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_script_reads_registry_dicts_with_their_comprehensions_and_unpacking() -> None:
    script = _script()
    import ast

    source = (
        '_A = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM"), "Foo": ("foo", "Foo")}\n'
        '_B = {"LlamaModel": ("llama", "LlamaForCausalLM"), '
        '**{k: (m, c) for k, (m, c) in _A.items() if c == "LlamaForCausalLM"}}\n'
    )
    names: dict[str, Any] = {}
    for name, value in script.module_assignments(ast.parse(source)):
        names[name] = script.evaluate(value, names, name)
    assert names["_B"] == {
        "LlamaModel": ("llama", "LlamaForCausalLM"),
        "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    }


def test_the_script_refuses_to_evaluate_anything_but_literals_and_dict_comprehensions() -> None:
    script = _script()
    import ast

    for text in ('__import__("os").system("true")', "open('x')", "{**globals()}", "(lambda: 1)()"):
        with pytest.raises(script.ExtractionError):
            script.evaluate(ast.parse(text, mode="eval").body, {}, "test")


def test_the_script_keeps_vllm_s_placeholders_in_a_message_template() -> None:
    script = _script()
    import ast

    node = ast.parse(
        'f"Model architectures {architectures} are not supported for now. x {arch!r}"', mode="eval"
    )
    assert (
        script.template(node.body)
        == "Model architectures {architectures} are not supported for now. x {arch!r}"
    )


def test_the_script_counts_a_pooling_name_of_a_generative_class_as_generative() -> None:
    script = _script()
    dicts = {
        "_TEXT_GENERATION_MODELS": {"Gemma2ForCausalLM": "gemma2:Gemma2ForCausalLM"},
        "_EMBEDDING_MODELS": {
            "Gemma2Model": "gemma2:Gemma2ForCausalLM",
            "BertModel": "bert:BertEmbeddingModel",
        },
    }
    merged = {name: target for table in dicts.values() for name, target in table.items()}
    kinds = script.classify(dicts, merged)
    assert kinds["pooling_only"] == ["BertModel"]
    assert kinds["pooling"] == ["BertModel", "Gemma2Model"]


def test_texts_for_a_release_before_any_removal_lists_no_removed_names() -> None:
    assert texts_for("0.9.2").previously_supported == {}
    assert texts_for("0.10.0").previously_supported == {"Phi3SmallForCausalLM": "0.9.2"}
    assert "BartModel" not in texts_for("0.19.0").previously_supported
    assert texts_for("0.19.0").out_of_tree["BartModel"] == "https://github.com/vllm-project/bart-plugin"
