"""The conventions every command shares: exit codes, choosing a stack or a config file, loading it into a
StackConfig, and argument choices taken from the stack schema (so a flag and a stack key accept the same
values). A command's own flags live in its module's `add_arguments`.
"""

from __future__ import annotations

import argparse
from enum import IntEnum
from pathlib import Path
from typing import Any, get_args

from colo.config import StackConfig, parse_stack_config
from colo.config.load import SECRET_KEYS
from colo.errors import ConfigError
from colo.stackfiles import StackFile, find_project, load_stack, load_stack_file


class ExitCode(IntEnum):
    OK = 0  # the plan fits, the process starts, every check passes
    FAILS = 1  # a pair does not fit, the process would not start, a check fails
    INVALID = 2  # the config or the arguments are invalid: nothing was planned


def schema_choices(literal: Any) -> tuple[str, ...]:
    """The values a stack-schema Literal accepts, for argparse `choices`."""
    return tuple(str(value) for value in get_args(literal))


def add_stack_arguments(
    parser: argparse.ArgumentParser, *, side: str | None = None
) -> argparse._MutuallyExclusiveGroup:
    """--stack or --config, one of them required; `side` names which side of a comparison they choose.
    The group is returned so that a command can offer one more source in its place (pack's --models)."""
    prefix = f"{side}: " if side else ""
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--stack", help=f"{prefix}a stack of the project (stacks/Pulumi.<stack>.yaml)")
    group.add_argument("--config", type=Path, help=f"{prefix}any file shaped like a Pulumi stack file")
    parser.add_argument(
        "--cwd",
        type=Path,
        help="run as if started in this directory, like the Pulumi CLI's --cwd: the project is the nearest "
        "Pulumi.yaml from there up (default: the working directory)",
    )
    return group


def read_stack_file(args: argparse.Namespace) -> StackFile:
    """The chosen stack of the project found from --cwd (or the working directory), or the --config file
    merged with that project's Pulumi.yaml when there is one."""
    start: Path | None = args.cwd
    if args.config is not None:
        config: Path = args.config if start is None else start / args.config
        return load_stack_file(config, project_file=find_project(start))
    return load_stack(args.stack, start)


def load_config(stack_file: StackFile) -> StackConfig:
    token = "hfToken" in stack_file.values
    region = stack_file.others.get("aws:region")
    profile = stack_file.others.get("aws:profile")
    plaintext = [k for k in SECRET_KEYS if k in stack_file.values and k not in stack_file.secret_keys]
    try:
        return parse_stack_config(
            stack_file.values,
            hf_token_set=token,
            aws_region=str(region) if region else None,
            aws_profile=str(profile) if profile else None,
            project_dir=stack_file.project_dir,
            vllm_api_key_set="vllmApiKey" in stack_file.values,
            plaintext_secrets=plaintext,
        )
    except ConfigError as exc:
        raise ConfigError(exc.problems, source=stack_file.source) from None
