"""A config.json whose own config class is the repository's code loads only with trustRemoteCode, even where vLLM
registers the architecture (colo/vllm/config_registry.yaml, colo.vllm.architectures.architecture_refusal).

vllm/transformers_utils/config.py::get_config gives a model_type outside vLLM's `_CONFIG_REGISTRY` to transformers'
AutoConfig, and transformers (dynamic_module_utils.py::resolve_trust_remote_code) refuses an auto_map AutoConfig
class for a model_type it does not register itself unless trust_remote_code is set. Alibaba-NLP's GTE models
(model_type "new") are the common case: vLLM serves GteModel / GteNewModel, yet cannot read their config alone.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from colo.vllm import EstimateRefused, EstimateRequest, estimate
from colo.vllm.architectures import architecture_refusal
from colo.vllm.checkpoint.hf_config import from_hf_config
from colo.vllm.config_registry import (
    config_needs_remote_code,
    read_releases,
    vllm_config_types,
    vllm_registers_config,
)
from tests.paths import REPO_ROOT

ENCODER_CONFIGS = Path(__file__).parent / "checkpoint" / "encoder_configs"
# The AutoConfig / AutoModel entries of Alibaba-NLP/gte-base-en-v1.5's config.json
GTE_AUTO_MAP = {
    "AutoConfig": "Alibaba-NLP/new-impl--configuration.NewConfig",
    "AutoModel": "Alibaba-NLP/new-impl--modeling.NewModel",
}


def refusal(
    version: str, architecture: str, model_type: str, *, auto_config: bool = True, trust: bool = False
) -> Any:
    return architecture_refusal(
        version,
        [architecture],
        has_auto_map=auto_config,
        trust_remote_code=trust,
        pooling=True,
        model="org/model",
        model_type=model_type,
        auto_config=auto_config,
    )


# --------------------------------------------------------------------------- the rule


def test_a_gte_config_is_refused_without_trust_remote_code_though_vllm_registers_gte_model() -> None:
    refused = refusal("0.20.2", "GteModel", "new")
    assert refused is not None and refused.key == "trustRemoteCode"
    assert "vLLM 0.20.2 registers GteModel, but has no config class for config.json's model_type 'new'" in (
        refused.message
    )
    assert (
        "ValueError: The repository org/model contains custom code which must be executed" in refused.message
    )
    assert refused.message.endswith(
        "[fix: trustRemoteCode: true if you trust the repository's code, which defines the config class]"
    )


def test_before_transformers_4_52_the_refusal_quotes_vllm_s_own_words() -> None:
    refused = refusal("0.9.2", "GteNewModel", "new")
    assert refused is not None and refused.key == "trustRemoteCode"
    assert "RuntimeError: Failed to load the model config." in refused.message


def test_with_trust_remote_code_the_gte_config_is_served() -> None:
    assert refusal("0.20.2", "GteModel", "new", trust=True) is None


def test_an_auto_map_without_an_auto_config_entry_leaves_the_config_to_transformers() -> None:
    # NovaSearch/stella_en_1.5B_v5: auto_map names AutoModel classes only; transformers reads its qwen2 config
    assert refusal("0.20.2", "GteModel", "new", auto_config=False) is None


def test_a_model_type_transformers_registers_is_not_refused() -> None:
    # some jina repositories put an AutoConfig entry beside model_type "bert"; microsoft/phi-2 beside "phi"
    assert refusal("0.20.2", "BertModel", "bert") is None
    assert refusal("0.20.2", "PhiForCausalLM", "phi") is None


def test_a_model_type_in_the_release_s_config_registry_is_not_refused() -> None:
    # THUDM's chatglm configs name their own AutoConfig; every release's _CONFIG_REGISTRY has "chatglm"
    assert refusal("0.8.0", "ChatGLMModel", "chatglm") is None
    assert refusal("0.34.0", "ChatGLMModel", "chatglm") is None


def test_the_config_registry_is_read_release_by_release() -> None:
    # _CONFIG_REGISTRY gains "kimi_vl" in 0.8.5; 0.8.5.post1 (no wheel of its own read) is read as 0.8.5
    assert config_needs_remote_code("0.8.4", "kimi_vl")
    assert not config_needs_remote_code("0.8.5", "kimi_vl")
    assert not config_needs_remote_code("0.8.5.post1", "kimi_vl")
    # "mllama" leaves vLLM's registry after 0.10.0 and is transformers' own from then on
    assert vllm_registers_config("0.10.0", "mllama") and not vllm_registers_config("0.10.1", "mllama")
    assert not config_needs_remote_code("0.10.1", "mllama")


def test_an_unregistered_architecture_keeps_its_own_refusal() -> None:
    refused = refusal("0.20.2", "NewModel", "new")
    assert refused is not None and refused.key == "trustRemoteCode"
    assert refused.message.startswith("NewModel has no vLLM implementation in 0.20.2")


# --------------------------------------------------------------------------- through the planner


def _gte_model(tmp_path: Path, **keys: Any) -> str:
    raw = json.loads((ENCODER_CONFIGS / "gte-multilingual-base.json").read_text())
    raw.pop("_source")
    root = tmp_path / "gte"
    root.mkdir()
    (root / "config.json").write_text(json.dumps({**raw, "auto_map": GTE_AUTO_MAP, **keys}))
    return str(root)


def _estimate(model: str, version: str, trust: bool):  # type: ignore[no-untyped-def]
    return estimate(
        EstimateRequest(model=model, vllm_version=version, gpu="L40S", pooling=True, trust_remote_code=trust)
    )


def test_a_gte_checkpoint_with_its_auto_map_is_refused_and_then_planned_with_trust(tmp_path: Path) -> None:
    model = _gte_model(tmp_path)
    arch = from_hf_config(json.loads((Path(model) / "config.json").read_text()), "gte")
    assert arch.auto_config and arch.model_type == "new"
    with pytest.raises(EstimateRefused) as refused:
        _estimate(model, "0.22.0", trust=False)
    assert refused.value.field == "trust_remote_code"  # the flag; a stack names it trustRemoteCode
    assert "model_type 'new'" in refused.value.message
    assert _estimate(model, "0.22.0", trust=True).budget.capacity is None


def test_the_qwen_vl_hub_checkpoint_needs_trust_remote_code_for_its_qwen_config() -> None:
    """Qwen/Qwen-VL-Chat-Int4: model_type "qwen", an AutoConfig in auto_map, QWenLMHeadModel registered by vLLM."""
    config = json.loads((REPO_ROOT / "tests/hub_files/Qwen/Qwen-VL-Chat-Int4/config.json").read_text())
    arch = from_hf_config(config, "Qwen/Qwen-VL-Chat-Int4")
    assert (arch.model_type, arch.auto_config) == ("qwen", True)
    assert config_needs_remote_code("0.20.2", "qwen")


# --------------------------------------------------------------------------- the data file


def _script() -> ModuleType:
    path = REPO_ROOT / "scripts" / "extract-vllm-config-registry.py"
    spec = importlib.util.spec_from_file_location("extract_vllm_config_registry", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_committed_table_is_what_the_releases_sources_say() -> None:
    script = _script()
    sources: Path = script.DEFAULT_SOURCES
    present = [r for r in read_releases() if (sources / r / script.CONFIG_PY).is_file()]
    if not present:
        pytest.skip(f"no unpacked vLLM releases under {sources}: the table cannot be re-read")
    for release in present:
        assert script.config_registry(sources / release / script.CONFIG_PY) == vllm_config_types(release), (
            release
        )
    if len(present) == len(read_releases()):
        assert script.main(["--check"]) == 0


def test_the_script_reads_a_registry_spread_from_another_dict_and_a_lazy_call(tmp_path: Path) -> None:
    script = _script()
    source = tmp_path / "config.py"
    source.write_text(
        '_OVERRIDE: dict = {"mllama": MllamaConfig}\n'
        '_CONFIG_REGISTRY: dict = LazyConfigDict(chatglm="ChatGLMConfig", **{"unlimited-ocr": "X"}, **_OVERRIDE)\n'
    )
    assert script.config_registry(source) == {"chatglm", "unlimited-ocr", "mllama"}
