"""colo's packages hold their layers (pyproject.toml, [tool.importlinter]): the stack's vocabulary and data at
the bottom, then the memory model, the config, the plan, what stands around the plan, the components, the
program and its tooling, the commands. No package imports one above it, and no packages import each other in
a circle, counting every import, those inside functions too."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import grimp
from importlinter.cli import lint_imports

from tests.architecture.imports import cycles, package_graph
from tests.paths import REPO_ROOT


def test_no_package_imports_a_layer_above_its_own() -> None:
    assert lint_imports(str(REPO_ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def test_no_packages_import_each_other_in_a_circle() -> None:
    assert cycles(package_graph()) == []


def test_the_package_graph_counts_an_import_made_inside_a_function() -> None:
    """colo.mock_run imports the program only when it runs it; the layers and the circle check see it."""
    assert "colo.program" in package_graph()["colo.mock_run"]
    graph = grimp.build_graph("colo")
    assert graph.direct_import_exists(importer="colo.mock_run", imported="colo.program")


def test_the_layer_check_fails_a_lower_package_that_imports_a_higher_one_inside_a_function(
    tmp_path: Path,
) -> None:
    """Guards the check above against passing vacuously: a package of two layers whose bottom reaches up."""
    package = tmp_path / "layered"
    for name, body in {
        "__init__.py": "",
        "top.py": "from layered import bottom\n",
        "bottom.py": "def late():\n    from layered import top\n    return top\n",
    }.items():
        (package / name).parent.mkdir(exist_ok=True)
        (package / name).write_text(body)
    (tmp_path / ".importlinter").write_text(
        textwrap.dedent(
            """
            [importlinter]
            root_package = layered

            [importlinter:contract:layers]
            name = layers
            type = layers
            containers = layered
            layers =
                top
                bottom
            """
        )
    )
    check = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))"
    run = subprocess.run(
        [sys.executable, "-c", check],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": ""},
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "layered.bottom -> layered.top" in run.stdout


def test_the_in_pod_weight_sync_loads_nothing_of_the_plan_the_config_or_the_memory_model() -> None:
    """The sync image runs `python -m colo.aws.weight_sync` with boto3 and little else beside colo."""
    program = (
        "import sys, colo.aws.weight_sync; "
        "print(sorted({m.split('.')[0] if not m.startswith('colo') else '.'.join(m.split('.')[:2]) "
        "for m in sys.modules} & {'colo.plan', 'colo.config', 'colo.vllm', 'pydantic', 'pulumi'}))"
    )
    run = subprocess.run(
        [sys.executable, "-c", program], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
