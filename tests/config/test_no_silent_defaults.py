"""Settings whose silent default or silent reading would target the wrong thing are refused, with the fix."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from colo.cli import main
from colo.config import parse_stack_config
from colo.config.load import CONFIG_KEYS, SECRET_KEYS
from colo.errors import ConfigError
from colo.stackfiles import load_stack


def _values(stack: str) -> dict[str, Any]:
    return copy.deepcopy(load_stack(stack).values)


def _problems(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(raw)
    return {problem.path: problem.message for problem in caught.value.problems}


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_managed_pool_without_a_cluster_name_is_refused_rather_than_sent_to_a_cluster_named_colo(
    stack: str,
) -> None:
    raw = _values(stack)
    del raw["cluster"]["name"]
    message = _problems(raw)["colo:cluster.name"]
    assert "required with nodePool.mode: managed" in message
    assert "pulumi config set --path cluster.name" in message


def test_existing_nodes_keep_the_default_instance_name() -> None:
    raw = _values("local")
    assert "name" not in raw["cluster"]
    assert parse_stack_config(raw).cluster.name == "colo"


def test_an_unquoted_kubernetes_version_is_refused_with_the_quoted_form(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = tmp_path / "Pulumi.unquoted.yaml"
    text = Path("stacks/Pulumi.local.yaml").read_text()
    stack.write_text(text.replace('kubernetesVersion: "1.34"', "kubernetesVersion: 1.30"))
    assert yaml.safe_load(stack.read_text())["config"]["colo:cluster"]["kubernetesVersion"] == 1.3
    assert main(["plan", "--config", str(stack)]) == 2
    err = capsys.readouterr().err
    assert "colo:cluster.kubernetesVersion: is the number 1.3 here" in err
    assert 'quote it, e.g. kubernetesVersion: "1.30"' in err


def test_a_quoted_kubernetes_version_is_read_as_written() -> None:
    raw = _values("local")
    raw["cluster"]["kubernetesVersion"] = "1.30"
    assert parse_stack_config(raw).cluster.minor == 30


def test_a_mistyped_top_level_key_is_told_the_closest_known_one() -> None:
    raw = _values("local")
    raw["hfTokn"] = {"secure": "v1:x"}
    assert _problems(raw)["colo:hfTokn"] == "unknown config key; did you mean hfToken?"


def test_an_unknown_key_near_no_known_one_lists_every_key_the_secret_keys_too() -> None:
    raw = _values("local")
    raw["gpuFleet"] = {"size": 2}
    message = _problems(raw)["colo:gpuFleet"]
    listed = message.removeprefix("unknown config key; known: ").split(", ")
    assert listed == [*CONFIG_KEYS, *SECRET_KEYS]
