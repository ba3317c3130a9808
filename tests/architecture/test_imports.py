"""The package boundaries hold: the vLLM memory model stands alone, the rest of colo uses only its public surface,
and no modules import each other in a circle."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.architecture.imports import (
    Import,
    colo_imports,
    colo_modules,
    cycles,
    imports_in,
    module_graph,
    reaching_into,
)
from tests.paths import REPO_ROOT

# What the memory model may not know: the stack and its config, Kubernetes, AWS, Pulumi, and colo's commands.
FORBIDDEN_IN_VLLM = (
    "colo.plan",
    "colo.config",
    "colo.components",
    "colo.aws",
    "colo.cli",
    "colo.pack",
    "colo.verify",
    "colo.diff",
    "colo.program",
    "colo.render",
    "colo.mock_run",
    "colo.inline_engine",
    "colo.stackfiles",
    "pulumi",
    "pulumi_kubernetes",
    "pulumi_aws",
    "boto3",
    "botocore",
    "kubernetes",
    "highspy",
)
# Everything else the memory model imports is the standard library, colo's data and small shared modules, or these.
# httpx2 is huggingface_hub's HTTP client: its transport errors tell a Hub out of reach from a Hub that refuses.
THIRD_PARTY_IN_VLLM = ("pydantic", "pydantic_core", "yaml", "packaging", "huggingface_hub", "httpx2")


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _in_vllm(i: Import) -> bool:
    return _within(i.importer, ("colo.vllm",))


def test_the_memory_model_imports_nothing_of_the_stack_kubernetes_aws_or_pulumi() -> None:
    offending = [i for i in colo_imports() if _in_vllm(i) and _within(i.imported, FORBIDDEN_IN_VLLM)]
    assert offending == []


def test_the_memory_model_needs_no_third_party_package_beyond_its_own_few() -> None:
    stdlib = sys.stdlib_module_names
    outside = {
        i.imported.split(".")[0]
        for i in colo_imports()
        if _in_vllm(i) and not i.imported.startswith("colo.") and i.imported != "colo"
    }
    assert {name for name in outside if name not in stdlib} <= set(THIRD_PARTY_IN_VLLM)


def test_the_rest_of_colo_reaches_the_memory_model_through_its_public_surface_alone() -> None:
    assert reaching_into("colo.vllm", colo_imports(), colo_modules()) == []


def test_the_surface_check_sees_a_module_that_reaches_in() -> None:
    """Guards the check above: naming a submodule is reaching in, naming what the package exports is not."""
    imports = (
        Import("colo.plan.pair", "colo.vllm.process.budget", 1),
        Import("colo.plan.pair", "colo.vllm.ProcessSpec", 2),
        Import("colo.vllm.colocate", "colo.vllm.process.budget", 3),
    )
    found = reaching_into("colo.vllm", imports, colo_modules())
    assert found == [imports[0]]


def test_the_memory_models_tests_need_none_of_the_stack_either() -> None:
    """tests/vllm runs where only the memory model's own dependencies are installed."""
    allowed_tests = ("tests.vllm", "tests.paths", "tests.model_files", "tests.hub")
    offending = [
        (i.importer, i.imported)
        for path in sorted((REPO_ROOT / "tests" / "vllm").rglob("*.py"))
        for i in imports_in(path)
        if _within(i.imported, FORBIDDEN_IN_VLLM)
        or (i.imported.startswith("tests.") and not _within(i.imported, allowed_tests))
    ]
    assert offending == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert cycles(module_graph()) == []


def test_the_circle_check_finds_a_circle() -> None:
    """Guards the check above against passing vacuously."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


BLOCKED = ("pulumi", "pulumi_kubernetes", "pulumi_aws", "boto3", "botocore", "kubernetes", "highspy")


@pytest.mark.parametrize("blocked", [BLOCKED])
def test_the_memory_model_sizes_a_process_in_an_interpreter_without_pulumi_kubernetes_or_boto3(
    blocked: tuple[str, ...],
) -> None:
    program = textwrap.dedent(
        f"""
        import sys
        from importlib.abc import MetaPathFinder

        class Refuse(MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {blocked!r} or name.startswith(("colo.plan", "colo.config")):
                    raise ImportError("blocked: " + name)
                return None

        sys.meta_path.insert(0, Refuse())
        from colo.vllm import EstimateRequest, estimate
        result = estimate(EstimateRequest(model="Qwen/Qwen3-8B", gpu="L40S", vllm_version="0.20.0"))
        assert result.budget.ok and result.budget.kv_bytes > 0, result.budget.errors
        print(sorted(m for m in sys.modules if m.split(".")[0] in {blocked!r}))
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", program], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
