"""The Kubernetes spec: what the components declare, decided by the plan from the stack config."""

from __future__ import annotations

import ast

from colo.cli.common import load_config
from colo.plan.kubernetes_spec import ModelVolumeSpec, kubernetes_spec
from colo.plan.stack import make_plan
from colo.stackfiles import load_stack
from tests.paths import REPO_ROOT


def test_the_spec_carries_the_cluster_volume_and_pairing_the_stack_configures() -> None:
    config = load_config(load_stack("dev"))
    plan = make_plan(config)
    spec = kubernetes_spec(config, plan)
    assert (spec.instance, spec.namespace, spec.kubernetes_version) == ("colo-dev", "colo-dev", "1.34")
    assert spec.gpu_pairing == "dra"
    assert spec.model_volume == ModelVolumeSpec("gp3", "200Gi", "ReadWriteOnce")
    assert spec.pairs == plan.pairs
    assert (spec.node_selector, spec.tolerations, spec.device_plugin) == (
        plan.node_selector,
        plan.tolerations,
        plan.device_plugin,
    )


def _imported_modules(source: str) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
    return modules


def test_components_import_nothing_from_the_stack_config() -> None:
    offenders = {
        str(path.relative_to(REPO_ROOT)): sorted(
            m for m in _imported_modules(path.read_text()) if m.startswith("colo.config")
        )
        for path in (REPO_ROOT / "colo" / "components").glob("*.py")
    }
    assert {path: modules for path, modules in offenders.items() if modules} == {}
