"""What `colo render` and `colo diff` rely on in the Pulumi SDK, each checked on a tiny program.

All of it is published SDK surface (tests/architecture/test_pulumi_surface.py keeps it so): colo.mock_run
hands the config over with set_all_config and records with set_mocks, the Mocks interface and a stack
transformation; colo.program tells a run inside the engine (or the mock runtime) from a plain script by
get_root_resource, lists the keys the engine handed over from get_config_env (the CLI's language host)
or colo.program.handed_over (a runner in this process), and reads secrecy with is_config_secret; colo.render
knows a secret input by the engine's wire-format signature and an unknown by contains_unknowns. When an SDK
release changes any of these, this test says which, in plain words, before the render tests fail obscurely.
The SDK range in pyproject is tested at both ends: this module runs in the locked environment (the newest)
and, under `make sdk-range` (scripts/check-sdk-range.sh), in one with the range's lowest release.
"""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement

from colo.mock_run import ProgramRun, run_program
from colo.render import SECRET_PLACEHOLDER, UNKNOWN_PLACEHOLDER, plain
from colo.stackfiles import StackFile
from tests.paths import REPO_ROOT

PROGRAM = """
import pulumi
from pulumi.runtime import get_config, get_root_resource, is_config_secret
from colo.program import colo_config_keys, export

class Box(pulumi.ComponentResource):
    def __init__(self, name):
        super().__init__("colotest:box:Box", name, None, None)
        pulumi.CustomResource(
            "colotest:index:Thing",
            "thing",
            {"token": pulumi.Output.secret("s3cret"), "size": 3, "later": pulumi.Output.from_input(pulumi.UNKNOWN)},
            opts=pulumi.ResourceOptions(
                parent=self, delete_before_replace=True, custom_timeouts=pulumi.CustomTimeouts(create="5m")
            ),
        )
        self.register_outputs({})

Box("box")
export("config_keys", colo_config_keys())
export("probe", get_config("colo:probe"))
export("secret_is_secret", is_config_secret("colo:token"))
export("has_root", get_root_resource() is not None)
export("later", pulumi.Output.from_input(41).apply(lambda n: n + 1))
"""


def _pinned_pulumi() -> Requirement:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    return next(r for r in map(Requirement, project["dependencies"]) if r.name == "pulumi")


def test_the_installed_sdk_is_in_the_range_pyproject_names() -> None:
    pinned = _pinned_pulumi()
    installed = version("pulumi")
    assert pinned.specifier.contains(installed), (
        f"pulumi {installed} is outside {pinned.specifier}, the range colo render was tested on; run the "
        f"SDK-driving tests with it (scripts/check-sdk-range.sh shows how), then widen the range in pyproject.toml"
    )


def _run(tmp_path: Path, *, preview: bool = False) -> ProgramRun:
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    stack = StackFile("colo", "sdk-check", {"probe": "1", "token": "t"}, secret_keys=frozenset({"token"}))
    return run_program(stack, program=program, render_dir=None, preview=preview)


def test_the_sdk_still_offers_what_render_relies_on(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.outputs.get("has_root") is True, (
        "get_root_resource() is None inside the mock runtime's program: colo.program would refuse to run "
        "under it as if started as a plain script"
    )
    assert run.outputs.get("config_keys") == ["probe", "token"], (
        "the keys handed to set_all_config are no longer what colo.program lists"
    )
    assert run.outputs.get("probe") == "1", "set_all_config no longer hands the program its config"
    assert run.outputs.get("secret_is_secret") is True, "set_all_config's secret keys are no longer secret"
    assert run.outputs.get("later") == 42, "an Output exported through colo.program.export is not resolved"
    (thing,) = run.mocks.of_type("colotest:index:Thing")
    assert plain(thing.inputs)["token"] == SECRET_PLACEHOLDER, (
        "a secret input no longer reaches the mocks marked with the wire format's secret signature: colo "
        "render would write secrets in plain text"
    )
    assert plain(thing.inputs)["size"] == 3
    options = run.mocks.options_of(thing)
    assert "colotest:box:Box" in options.parent, "stack transformations no longer see the parent resource"
    assert options.delete_before_replace, "stack transformations no longer see delete_before_replace"
    assert options.custom_timeouts == {"create": "5m"}, "stack transformations no longer see custom timeouts"


def test_a_value_known_only_after_deploy_reaches_the_mocks_as_an_unknown_in_a_preview(tmp_path: Path) -> None:
    run = _run(tmp_path, preview=True)
    (thing,) = run.mocks.of_type("colotest:index:Thing")
    assert plain(thing.inputs)["later"] == UNKNOWN_PLACEHOLDER, (
        "pulumi.contains_unknowns no longer recognises an unknown input as the mocks receive it in a preview"
    )
