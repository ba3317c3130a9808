"""Input that used to crash or hang colo is refused quickly, as an invalid config naming the file or key."""

from __future__ import annotations

import copy
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from colo.cli import main
from colo.config import parse_stack_config
from colo.config.yaml_safety import MAX_DEPTH, UnsafeYaml, load_yaml
from colo.errors import ConfigError
from colo.stackfiles import load_stack, load_stack_file
from tests.model_files import TINY_CONFIG

LOCAL = Path("stacks/Pulumi.local.yaml").read_text()


def _valid() -> dict[str, Any]:
    return copy.deepcopy(load_stack("local").values)


def _refusal(path: Path, capsys: pytest.CaptureFixture[str], command: str = "plan") -> str:
    """Runs `colo <command> --config path`; the refusal must be exit 2 and name the file."""
    started = time.monotonic()
    extra = ["--out", str(path.parent / "out")] if command == "render" else []
    assert main([command, "--config", str(path), *extra]) == 2
    assert time.monotonic() - started < 5
    err = capsys.readouterr().err
    assert str(path) in err
    return err


def _problems(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(raw)
    return {problem.path: problem.message for problem in caught.value.problems}


def _alias_bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels):
        below = f"*a{level - 1}"
        lines.append(f"a{level}: &a{level} [{', '.join([below] * 9)}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_before_anything_expands_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "Pulumi.bomb.yaml"
    path.write_text(
        LOCAL + "  colo:bomb:\n" + "".join(f"    {line}\n" for line in _alias_bomb().splitlines())
    )
    assert "aliases expand to more than" in _refusal(path, capsys, "render")
    assert not (tmp_path / "out").exists()


def test_an_alias_inside_its_own_anchor_is_refused_as_a_cycle() -> None:
    with pytest.raises(UnsafeYaml, match=r"\*loop on line 1 refers to a node that contains it"):
        load_yaml("pairs: &loop [1, *loop]\n")


@pytest.mark.parametrize(
    "text", ["a: " + "[" * 5000 + "]" * 5000, "a:\n" + "".join(" " * i + "- \n" for i in range(200))]
)
def test_deep_nesting_is_refused_not_a_recursion_error(text: str) -> None:
    with pytest.raises(UnsafeYaml):
        load_yaml(text)


def test_nesting_a_stack_file_never_needs_is_refused_with_its_line() -> None:
    text = "a: " + "{b: " * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)
    with pytest.raises(UnsafeYaml, match=f"nested more than {MAX_DEPTH} levels deep"):
        load_yaml(text)


def test_shared_blocks_through_anchors_and_merge_keys_still_load() -> None:
    text = "base: &server {model: m, maxNumSeqs: 8}\nllm: {<<: *server, maxNumSeqs: 16}\nother: *server\n"
    assert load_yaml(text)["llm"] == {"model": "m", "maxNumSeqs": 16}


def test_a_duplicate_key_is_refused_naming_both_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "Pulumi.twice.yaml"
    text = LOCAL.replace("    namespace: colo\n", "    namespace: colo\n    namespace: other\n")
    path.write_text(text)
    first = text.splitlines().index("    namespace: colo") + 1
    err = _refusal(path, capsys)
    assert f"the key 'namespace' is given twice in one mapping, on lines {first} and {first + 1}" in err


def test_invalid_utf8_is_refused_naming_the_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "Pulumi.latin1.yaml"
    path.write_bytes(LOCAL.encode() + b"# caf\xe9\n")
    assert f"is not UTF-8 text (byte 0xe9 at offset {len(LOCAL.encode()) + 5})" in _refusal(path, capsys)


def test_binary_garbage_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "Pulumi.garbage.yaml"
    path.write_bytes(bytes(range(256)) * 64)
    _refusal(path, capsys)


def test_a_file_over_the_size_bound_is_refused_by_its_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "Pulumi.huge.yaml"
    with path.open("w") as handle:
        handle.write(LOCAL + "# " + "x" * (2 * 1024 * 1024) + "\n")
    assert "colo reads files of at most 1 MiB here" in _refusal(path, capsys)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_device_as_the_stack_file_is_refused_without_reading_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert "not a regular file" in _refusal(Path("/dev/zero"), capsys)


def test_an_integer_longer_than_python_converts_is_refused() -> None:
    with pytest.raises(UnsafeYaml, match="a value colo cannot read"):
        load_yaml("a: " + "9" * 5000)


def test_python_tags_are_refused_by_the_safe_loader() -> None:
    with pytest.raises(UnsafeYaml, match="not valid YAML"):
        load_yaml("a: !!python/object/apply:os.system ['true']\n")


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_infinite_and_not_a_number_settings_are_refused(value: float) -> None:
    raw = _valid()
    raw["budget"] = {"embeddingConcurrency": value}
    assert "finite number" in _problems(raw)["colo:budget.embeddingConcurrency"]


def test_inf_written_in_yaml_is_refused_as_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "Pulumi.inf.yaml"
    path.write_text(LOCAL + "  colo:budget:\n    embeddingConcurrency: .inf\n")
    assert "colo:budget.embeddingConcurrency" in _refusal(path, capsys)


@pytest.mark.parametrize("memory", ["16Gi\n", "16Gi\n-", "１６Gi"])
def test_a_memory_quantity_with_a_newline_or_non_ascii_digits_is_refused(memory: str) -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["memory"] = memory
    assert "memory quantity" in _problems(raw)["colo:pairs[0].llm.memory"]


def test_an_empty_cluster_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = _valid()
    raw["cluster"]["name"] = ""
    assert "colo:cluster.name" in _problems(raw)
    path = tmp_path / "Pulumi.noname.yaml"
    path.write_text(LOCAL.replace("  colo:cluster:\n", '  colo:cluster:\n    name: ""\n'))
    assert "colo:cluster.name" in _refusal(path, capsys, "render")


def test_render_validates_before_serialising_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import colo.mock_run

    def never(*_: Any, **__: Any) -> None:
        raise AssertionError("the program ran on an invalid config")

    monkeypatch.setattr(colo.mock_run, "run_program", never)
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(LOCAL.replace("namespace: colo", "namespace: Not_A_Label"))
    _refusal(path, capsys, "render")
    assert not (tmp_path / "out").exists()


def _profile_problem(profile: str) -> str:
    """A profile that cannot be read is an invalid config, named at its key."""
    raw = _valid()
    raw["pairs"][0]["llm"]["profile"] = profile
    return _problems(raw)["colo:pairs[0].llm.profile"]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_profile_on_a_device_is_refused_quickly() -> None:
    started = time.monotonic()
    assert "not a regular file" in _profile_problem("/dev/zero")
    assert time.monotonic() - started < 2


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_among_a_profiles_safetensors_is_refused_not_waited_on(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(TINY_CONFIG))
    os.mkfifo(model / "model.safetensors")
    assert "model.safetensors is not a regular file" in _profile_problem(str(model))


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[1, 2, 3]", "does not hold a JSON object"),
        (
            '{"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 0, "vocab_size": 8}',
            "ZeroDivisionError",
        ),
        ('{"text_config": "not an object", "hidden_size": 8}', "config.json"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("not json", "Expecting value"),
    ],
)
def test_a_hostile_config_json_is_a_problem_not_a_crash(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(content)
    assert expected in _profile_problem(str(path))


def test_a_config_json_over_its_bound_is_refused_by_size(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"pad": "' + "x" * (5 * 1024 * 1024) + '"}')
    assert "at most 4 MiB" in _profile_problem(str(path))


def test_a_stack_file_read_through_the_loader_keeps_its_values() -> None:
    stack = load_stack_file(Path("stacks/Pulumi.local.yaml"))
    assert stack.values["pairs"] == yaml.safe_load(LOCAL)["config"]["colo:pairs"]
