"""What `colo render` and `colo diff` rely on in the Pulumi SDK, checked on a tiny program.

colo.mock_run uses public API (reset_options, set_all_config, set_mocks, the Mocks interface, a stack
transformation) plus the root Stack's `outputs`; colo.render recognises secrets with pulumi.runtime.rpc's
is_rpc_secret; colo.program lists config keys from pulumi.runtime.config.CONFIG and tells a run inside
the engine (or the mock runtime) from a plain script by pulumi.runtime.settings.get_monitor. When an SDK upgrade
changes any of these, this test says which, in plain words, before the render tests fail obscurely.
"""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement

from colo.mock_run import run_program
from colo.render import SECRET_PLACEHOLDER, plain
from colo.stackfiles import StackFile
from tests.paths import REPO_ROOT

PROGRAM = """
import pulumi
from pulumi.runtime.config import CONFIG
from pulumi.runtime.settings import get_monitor

class Box(pulumi.ComponentResource):
    def __init__(self, name):
        super().__init__("colotest:box:Box", name, None, None)
        pulumi.CustomResource(
            "colotest:index:Thing",
            "thing",
            {"token": pulumi.Output.secret("s3cret"), "size": 3},
            opts=pulumi.ResourceOptions(
                parent=self, delete_before_replace=True, custom_timeouts=pulumi.CustomTimeouts(create="5m")
            ),
        )
        self.register_outputs({})

Box("box")
pulumi.export("config_keys", sorted(CONFIG.get()))
pulumi.export("answer", 42)
pulumi.export("has_monitor", get_monitor() is not None)
"""


def _pinned_pulumi() -> Requirement:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    return next(r for r in map(Requirement, project["dependencies"]) if r.name == "pulumi")


def test_the_sdk_still_offers_what_render_relies_on(tmp_path: Path) -> None:
    pinned = _pinned_pulumi()
    installed = version("pulumi")
    assert pinned.specifier.contains(installed), (
        f"pulumi {installed} is outside {pinned.specifier}, the range colo render was tested on; run this "
        f"test with it, then widen the pin in pyproject.toml"
    )
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    run = run_program(StackFile("colo", "sdk-check", {"probe": "1"}), program=program, render_dir=None)

    assert run.outputs.get("answer") == 42, "pulumi.export no longer lands in the root Stack's outputs"
    assert run.outputs.get("has_monitor") is True, (
        "get_monitor() no longer returns the mock runtime's monitor: colo.program would refuse to run under it"
    )
    assert run.outputs.get("config_keys") == ["colo:probe"], (
        "set_all_config no longer fills pulumi.runtime.config.CONFIG, where colo.program lists colo: keys"
    )
    (thing,) = run.mocks.of_type("colotest:index:Thing")
    assert plain(thing.inputs) == {"size": 3, "token": SECRET_PLACEHOLDER}, (
        "is_rpc_secret no longer recognises a secret input as the mocks receive it: colo render would write "
        "secrets in plain text"
    )
    options = run.mocks.options_of(thing)
    assert "colotest:box:Box" in options.parent, "stack transformations no longer see the parent resource"
    assert options.delete_before_replace, "stack transformations no longer see delete_before_replace"
    assert options.custom_timeouts == {"create": "5m"}, "stack transformations no longer see custom timeouts"
