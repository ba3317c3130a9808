"""What a command-line user expects of any tool: a version, completion, help with examples for every flag,
"did you mean", output for a person by default, a verdict that agrees with the exit code, progress on stderr."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from colo.cli import COMMANDS, build_parser, colo_version, main
from colo.cli.completion_cmd import completion_script
from colo.cli.flag_names import as_flags, stack_key_flags
from colo.stackfiles import load_stack
from tests.stack_edits import edited_local_stack

ESTIMATE = ["estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "L40S", "--vllm-version", "0.20.2"]
WIZARD = Path(__file__).resolve().parents[1] / "hub_files" / "alpindale" / "WizardLM-2-8x22B"


def _sub_parsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser(every_command=True)
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_version_prints_the_installed_release(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"colo {colo_version()}"


def test_the_top_level_help_speaks_to_users_and_lists_every_command() -> None:
    text = build_parser().format_help()
    assert "Each command lives in its own module" not in text
    for name in COMMANDS:
        assert f"\n    {name}" in text, name
    assert "exit codes:" in text


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_shows_examples_that_parse(name: str) -> None:
    sub_parser = _sub_parsers()[name]
    assert "examples:\n  colo " + name in (sub_parser.epilog or "")
    parser = build_parser(every_command=True)
    for example in COMMANDS[name].examples:
        argv = example.split(">")[0].split()[1:]  # no shell redirection
        assert parser.parse_args(argv).command == name, example


def test_a_command_whose_exit_codes_differ_shows_its_own() -> None:
    """colo load exits 0 or 2 and verify's 1 is a wrong plan: neither shows plan's "1 a pair does not fit"."""
    for name, own in (("load", "0  measured"), ("verify", "1  the plan was wrong")):
        epilog = _sub_parsers()[name].epilog or ""
        assert own in epilog and "a pair does not fit" not in epilog, name
    assert "a pair does not fit" in (_sub_parsers()["plan"].epilog or "")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_flag_of_every_command_says_what_it_does(name: str) -> None:
    silent = [
        action.option_strings or action.dest
        for action in _sub_parsers()[name]._actions
        if not action.help and action.dest != "help"
    ]
    assert not silent, f"colo {name}: flags without help text: {silent}"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_covers_every_command_and_their_flags(
    shell: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["completion", shell]) == 0
    script = capsys.readouterr().out
    assert script == completion_script(shell) + "\n"
    for name in COMMANDS:
        assert name in script
    for flag in ("--max-model-len", "--stack", "--logs", "--plan", "--format"):
        assert flag in script, flag


def test_the_bash_completion_script_is_valid_bash() -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash here")
    done = subprocess.run([bash, "-n"], input=completion_script("bash"), text=True, capture_output=True)
    assert done.returncode == 0, done.stderr


def test_estimate_prints_a_verdict_and_a_budget_table_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ESTIMATE, "--max-model-len", "32768"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[1].startswith("verdict: starts: KV cache")
    for label in ("CUDA context", "weights", "activation peak", "KV cache", "= footprint (nvidia-smi)"):
        assert label in out
    assert not out.lstrip().startswith("{")


def test_json_and_format_json_print_the_same_view(capsys: pytest.CaptureFixture[str]) -> None:
    main([*ESTIMATE, "--json"])
    first = json.loads(capsys.readouterr().out)
    main([*ESTIMATE, "--format", "json"])
    assert json.loads(capsys.readouterr().out) == first
    assert first["ok"] is True and first["verdict"] == "starts" and first["reasons"] == []


def test_a_process_that_cannot_start_says_so_first_on_stdout_and_on_stderr_and_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["estimate", "--model", str(WIZARD), "--gpu", "H200"]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    verdict = out.splitlines()[1]
    assert verdict.startswith("verdict: DOES NOT START: weights 261.94 GiB do not fit")
    assert "DOES NOT START: weights 261.94 GiB do not fit" in err
    assert main([*argv, "--json"]) == 1
    view = json.loads(capsys.readouterr().out)
    assert view["ok"] is False and view["verdict"] == "fails" and view["reasons"]


def test_a_refusal_names_the_flags_that_were_typed_not_stack_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ESTIMATE, "--max-model-len", "100000"]) == 2
    err = capsys.readouterr().err
    assert "[fix: --max-model-len at most 40960, or --allow-long-max-model-len if" in err
    assert "maxModelLen" not in err and "allowLongMaxModelLen" not in err


def test_every_stack_key_estimate_translates_names_a_flag_estimate_takes() -> None:
    flags = {
        s
        for a in build_parser("estimate")._subparsers._group_actions[0].choices["estimate"]._actions  # type: ignore[union-attr]
        for s in a.option_strings
    }
    assert set(stack_key_flags().values()) <= flags
    assert as_flags("set `gpuMemoryUtilization`, colo:pairs[0].llm.maxModelLen stays") == (
        "set `--gpu-memory-utilization`, colo:pairs[0].llm.maxModelLen stays"
    )


def test_the_context_figure_is_the_sum_of_its_named_parts(capsys: pytest.CaptureFixture[str]) -> None:
    """context_gib is larger than gpu_detail.context_mib where the release creates cuBLAS handles before its
    memory snapshot (0.33+); context_parts names each share."""
    main(["estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "L40S", "--vllm-version", "0.33.0", "--json"])
    view = json.loads(capsys.readouterr().out)
    parts = view["context_parts"]
    assert parts["gpu_context_mib"] == view["gpu_detail"]["context_mib"]
    assert parts["cublas_before_snapshot_mib"] > 0
    assert abs(sum(parts.values()) / 1024 - view["context_gib"]) < 0.01


def test_a_mistyped_gpu_is_told_the_closest_catalog_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "RTX 4900"]) == 2
    assert "did you mean RTX-4090" in capsys.readouterr().err


def _stack_with(tmp_path: Path, change: dict[str, object]) -> Path:
    return edited_local_stack(
        tmp_path, lambda config: config["colo:pairs"][0]["llm"].update(change), "changed"
    )


def test_a_mistyped_server_key_is_told_the_closest_key_of_that_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _stack_with(tmp_path, {"maxModelLength": 1024})
    assert main(["plan", "--config", str(path)]) == 2
    assert (
        "colo:pairs[0].llm.maxModelLength: unknown key; did you mean maxModelLen?" in capsys.readouterr().err
    )


def test_an_unpinned_image_is_told_to_pin_the_stacks_own_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    release = load_stack("local").values["pairs"][0]["llm"]["vllm"]["version"]
    path = _stack_with(tmp_path, {"vllm": {"version": release, "image": "vllm/vllm-openai:latest"}})
    assert main(["plan", "--config", str(path)]) == 2
    assert f"give an explicit tag such as :v{release} or a digest" in capsys.readouterr().err


def test_preflight_of_a_stack_with_no_aws_says_there_is_nothing_to_check(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    assert main(["preflight", "--stack", "local"]) == 0
    assert capsys.readouterr().out.startswith("nothing to check: stack local uses no AWS")


def test_verify_with_log_but_no_server_is_a_missing_argument(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--stack", "local", "--log", "server.log"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("invalid arguments") and "--server: missing argument" in err


def test_slow_steps_say_what_they_do_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", "--models", "packs/field-report.yaml", "--alternatives", "0"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("colo pack: planning every model") and "planning every model" not in out
