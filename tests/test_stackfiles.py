"""Stack files are merged with Pulumi.yaml the way the Pulumi CLI does it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from colo.errors import ConfigError
from colo.stackfiles import list_stacks, load_stack, load_stack_file


def test_project_defaults_fill_keys_the_stack_does_not_set(tmp_path: Path) -> None:
    project = tmp_path / "Pulumi.yaml"
    project.write_text(
        "name: colo\nconfig:\n  budget:\n    type: object\n    default: {safetyMarginMiB: 700}\n"
    )
    stack = tmp_path / "Pulumi.x.yaml"
    stack.write_text("config:\n  colo:pairs: []\n  aws:region: eu-west-1\n")
    merged = load_stack_file(stack, project_file=project)
    assert merged.values == {"budget": {"safetyMarginMiB": 700}, "pairs": []}
    assert merged.others == {"aws:region": "eu-west-1"}


def test_secure_values_are_secret_and_never_passed_through(tmp_path: Path) -> None:
    project = tmp_path / "Pulumi.yaml"
    project.write_text("name: colo\n")
    stack = tmp_path / "Pulumi.x.yaml"
    stack.write_text("config:\n  colo:hfToken:\n    secure: v1:AAAAciphertext\n")
    merged = load_stack_file(stack, project_file=project)
    config, secrets = merged.engine_config("placeholder")
    assert secrets == ["colo:hfToken"]
    assert config["colo:hfToken"] == "placeholder"


def test_objects_reach_the_program_as_json_text() -> None:
    config, _ = load_stack("local").engine_config()
    assert isinstance(json.loads(config["colo:pairs"]), list)


def test_an_unknown_stack_names_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        load_stack("staging")
    assert "local" in caught.value.render()


def test_a_pulumi_yml_project_reads_its_stacks_with_the_same_extension(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yml").write_text("name: colo\nstackConfigDir: stacks\n")
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.mine.yml").write_text("config:\n  colo:pairs: []\n")
    assert list_stacks(tmp_path / "stacks") == ["mine"]
    assert load_stack("mine", tmp_path).values == {"pairs": []}
