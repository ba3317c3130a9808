"""What every command shares: exit codes, --stack/--config, and flag choices taken from the stack schema."""

from __future__ import annotations

import signal
from typing import Any, get_args

import pytest

from colo.cli import build_parser, main
from colo.cli.common import ExitCode
from colo.config.schema import KV_CACHE_DTYPE_CHOICES, QUANTIZATION_CHOICES, ModelDtype, SpeculativeMethod

ESTIMATE = ["estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "L40S"]


def test_exit_codes_are_the_documented_ones() -> None:
    assert (ExitCode.OK, ExitCode.FAILS, ExitCode.INVALID) == (0, 1, 2)


@pytest.mark.parametrize(
    ("flag", "values"),
    [
        ("--quantization", QUANTIZATION_CHOICES),
        ("--kv-cache-dtype", KV_CACHE_DTYPE_CHOICES),
        ("--speculative-method", get_args(SpeculativeMethod)),
        ("--dtype", get_args(ModelDtype)),
    ],
)
def test_estimate_accepts_exactly_the_values_a_stack_file_accepts(flag: str, values: tuple[Any, ...]) -> None:
    parser = build_parser("estimate")
    attribute = flag.removeprefix("--").replace("-", "_")
    for value in values:
        assert getattr(parser.parse_args([*ESTIMATE, flag, value]), attribute) == value
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args([*ESTIMATE, flag, "not-a-schema-value"])
    assert exit_info.value.code == ExitCode.INVALID


@pytest.mark.parametrize("command", ["plan", "render", "diff", "preflight", "pack"])
def test_every_stack_command_takes_a_stack_or_a_config_file(command: str) -> None:
    extra = {"render": ["--out", "out"], "diff": ["--base", "main"]}.get(command, [])
    parser = build_parser(command)
    assert parser.parse_args([command, "--stack", "prod", *extra]).stack == "prod"
    assert str(parser.parse_args([command, "--config", "any.yaml", *extra]).config) == "any.yaml"


def test_stack_and_config_together_are_refused_as_invalid_arguments() -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["plan", "--stack", "prod", "--config", "stacks/Pulumi.prod.yaml"])
    assert exit_info.value.code == ExitCode.INVALID


@pytest.mark.skipif(not hasattr(signal, "SIGPIPE"), reason="no SIGPIPE on this platform")
def test_main_called_in_process_leaves_the_callers_sigpipe_handler_alone(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Only the console entry point restores SIGPIPE's default; a test runner or a user's program calling
    main() keeps Python's, so a later write to a closed socket raises instead of killing that process."""
    before = signal.getsignal(signal.SIGPIPE)
    assert main(["plan", "--stack", "local", "--format", "json"]) == 0
    assert signal.getsignal(signal.SIGPIPE) == before
    capsys.readouterr()
