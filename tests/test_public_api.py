"""The public surface: what `colo` exports at top level, the same objects colo.components exports, loaded lazily
so that `import colo`, the stack schema's pieces and the memory model never import Pulumi."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import colo
import colo.components
from tests.paths import REPO_ROOT

BLOCKED = ("pulumi", "pulumi_kubernetes", "pulumi_aws")


def _run_without_pulumi(body: str) -> subprocess.CompletedProcess[str]:
    program = textwrap.dedent(
        f"""
        import sys
        from importlib.abc import MetaPathFinder

        class Refuse(MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {BLOCKED!r}:
                    raise ImportError("blocked: " + name)
                return None

        sys.meta_path.insert(0, Refuse())
        """
    )
    return subprocess.run(
        [sys.executable, "-c", program + textwrap.dedent(body)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_import_colo_and_its_schema_pieces_need_no_pulumi() -> None:
    run = _run_without_pulumi(
        """
        import colo
        from colo import Budget, ServerSpec, VllmImage, __version__
        spec = ServerSpec(model="Qwen/Qwen3-8B", maxModelLen=8192, vllm=VllmImage(version="0.20.0"))
        print(__version__, spec.max_model_len, Budget().safety_margin_mib, sorted(sys.modules).count("pulumi"))
        """
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [colo.__version__, "8192", "1024", "0"]


def test_a_component_is_loaded_only_when_asked_for() -> None:
    run = _run_without_pulumi(
        """
        import colo
        try:
            colo.ColocatedPair
        except ImportError as exc:
            print("refused:", exc)
        """
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("refused: blocked: pulumi")


def test_every_top_level_name_is_what_colo_components_exports() -> None:
    names = [name for name in colo.__all__ if name != "__version__"]
    assert sorted(names) == sorted(colo.components.__all__)
    for name in names:
        assert getattr(colo, name) is getattr(colo.components, name), name


def test_a_name_outside_the_surface_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'plan_pair'"):
        colo.plan_pair  # noqa: B018


def test_dir_lists_the_surface() -> None:
    assert set(colo.__all__) <= set(dir(colo))
