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


# Components take the stack schema's pieces as arguments (ServerSpec, Cluster, ...) and validate them as a stack
# file is validated; how config is loaded (files, the engine's config, the CLI's values) stays in colo.config.
# The cluster a stack names (colo.config.cluster_target) is such a piece: what the provider is built from.
SCHEMA_MODULES = {"colo.config", "colo.config.schema", "colo.config.cluster_target"}


# The Kubernetes provider's own settings (kubeconfig, context, renderYamlToDirectory) say how the provider
# reaches the cluster; the after-rollout verify hook reads the cluster the same way (colo.components.verify_hook).
PROVIDER_SETTINGS = "kubernetes"


def _provider_settings_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "Config"
        and [ast.literal_eval(arg) for arg in node.args if isinstance(arg, ast.Constant)]
        == [PROVIDER_SETTINGS]
    )


def _reads_pulumi_config(source: str) -> bool:
    tree = ast.parse(source)
    allowed = {id(node.func) for node in ast.walk(tree) if _provider_settings_call(node)}
    return any(
        isinstance(node, ast.Attribute)
        and node.attr in {"Config", "get_config", "CONFIG"}
        and id(node) not in allowed
        for node in ast.walk(tree)
    )


def test_components_take_the_schemas_pieces_and_never_read_the_stack_config_themselves() -> None:
    offenders = {
        str(path.relative_to(REPO_ROOT)): sorted(
            m
            for m in _imported_modules(path.read_text())
            if m.startswith("colo.config") and m not in SCHEMA_MODULES
        )
        for path in (REPO_ROOT / "colo" / "components").glob("*.py")
    }
    assert {path: modules for path, modules in offenders.items() if modules} == {}
    readers = [
        str(path.relative_to(REPO_ROOT))
        for path in (REPO_ROOT / "colo" / "components").glob("*.py")
        if _reads_pulumi_config(path.read_text())
    ]
    assert readers == []


def test_the_config_check_sees_a_component_that_reads_pulumi_config() -> None:
    """Guards the check above against passing vacuously."""
    assert _reads_pulumi_config("import pulumi\nregion = pulumi.Config('aws').get('region')\n")
    assert not _reads_pulumi_config("import pulumi\nname = pulumi.Output.from_input('x')\n")
    assert _reads_pulumi_config("import pulumi\nmodel = pulumi.Config().get('model')\n")
    assert _reads_pulumi_config("import pulumi\nmodel = pulumi.Config('colo').get('pairs')\n")
    assert not _reads_pulumi_config(
        "import pulumi\nkubeconfig = pulumi.Config('kubernetes').get('kubeconfig')\n"
    )
