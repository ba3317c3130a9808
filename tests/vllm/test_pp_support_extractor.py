"""scripts/extract-vllm-pp-support.py follows a registered class's bases through vLLM's modules and packages to
decide whether SupportsPP is in its MRO, and writes each architecture's runs of releases without it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tests.paths import REPO_ROOT


def _script() -> ModuleType:
    path = REPO_ROOT / "scripts" / "extract-vllm-pp-support.py"
    spec = importlib.util.spec_from_file_location("extract_vllm_pp_support", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


PP = _script()

FILES = {
    "vllm/model_executor/models/interfaces.py": "class SupportsPP: ...\n",
    "vllm/model_executor/models/llama.py": (
        "from .interfaces import SupportsPP\nclass LlamaForCausalLM(nn.Module, SupportsPP): ...\n"
    ),
    "vllm/model_executor/models/bert.py": "class BertModel(nn.Module): ...\n",
    # a platform package re-exporting a class that inherits a supported one from another module
    "vllm/models/deepseek/__init__.py": (
        "if current_platform.is_cuda():\n    from .nvidia.model import DeepseekForCausalLM\n"
        "else:\n    from vllm.model_executor.models.bert import BertModel as DeepseekForCausalLM\n"
    ),
    "vllm/models/deepseek/nvidia/model.py": (
        "from vllm.model_executor.models import llama\nclass DeepseekForCausalLM(llama.LlamaForCausalLM): ...\n"
    ),
    # the Transformers backend: a package whose mixins carry SupportsPP
    "vllm/model_executor/models/transformers/__init__.py": (
        "from vllm.model_executor.models.transformers.causal import CausalMixin\n"
        "class TransformersForCausalLM(CausalMixin): ...\n"
    ),
    "vllm/model_executor/models/transformers/causal.py": (
        "from vllm.model_executor.models.transformers.base import Base\nclass CausalMixin(Base): ...\n"
    ),
    "vllm/model_executor/models/transformers/base.py": (
        "from vllm.model_executor.models.interfaces import SupportsPP\nclass Base(nn.Module, SupportsPP): ...\n"
    ),
}


def _tree(root: Path) -> object:
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return PP.SourceTree(root)


def test_supports_pp_is_found_through_imports_packages_and_module_attributes(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    models = "vllm.model_executor.models"
    assert tree.implements(f"{models}.llama", "LlamaForCausalLM")
    assert tree.implements("vllm.models.deepseek", "DeepseekForCausalLM")  # the CUDA branch
    assert tree.implements(f"{models}.transformers", "TransformersForCausalLM")
    assert not tree.implements(f"{models}.bert", "BertModel")
    assert not tree.implements(f"{models}.missing", "Anything")  # outside the sources: not implemented


def test_registry_module_names_are_relative_to_the_models_package_unless_dotted_from_vllm() -> None:
    assert PP.registry_module("llama") == "vllm.model_executor.models.llama"
    assert PP.registry_module("vllm.models.qwen3_5") == "vllm.models.qwen3_5"


def test_each_architecture_gets_its_runs_of_consecutive_releases_without_supports_pp() -> None:
    releases = ["0.1.0", "0.2.0", "0.3.0", "0.4.0"]
    per_release = {"0.1.0": {"A", "B"}, "0.2.0": {"A"}, "0.3.0": {"B"}, "0.4.0": {"A", "B"}}
    assert PP.ranges_of(releases, per_release) == {
        "A": [["0.1.0", "0.2.0"], ["0.4.0", "0.4.0"]],
        "B": [["0.1.0", "0.1.0"], ["0.3.0", "0.4.0"]],
    }


def test_only_the_unsupported_mapping_is_rewritten() -> None:
    text = '# header\nsource: x\nplacement:\n  A: {}\nunsupported:\n  Old: [["0.1.0", "0.1.0"]]\n'
    section = PP.render_unsupported({"New": [["0.2.0", "0.3.0"]]})
    assert PP.replace_unsupported(text, section) == (
        '# header\nsource: x\nplacement:\n  A: {}\nunsupported:\n  New: [["0.2.0", "0.3.0"]]\n'
    )
