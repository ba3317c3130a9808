"""What the commands share: choosing a stack or a config file, and loading it into a StackConfig."""

from __future__ import annotations

import argparse
from pathlib import Path

from colo.config import StackConfig, parse_stack_config
from colo.errors import ConfigError
from colo.stackfiles import StackFile, load_stack, load_stack_file


def add_stack_arguments(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument("--stack", help="a stack in stacks/ (Pulumi.<stack>.yaml)")
    group.add_argument("--config", type=Path, help="any file shaped like a Pulumi stack file")


def read_stack_file(args: argparse.Namespace) -> StackFile:
    if args.config is not None:
        return load_stack_file(args.config)
    return load_stack(args.stack)


def load_config(stack_file: StackFile) -> StackConfig:
    token = "hfToken" in stack_file.values
    region = stack_file.others.get("aws:region")
    try:
        return parse_stack_config(
            stack_file.values,
            hf_token_set=token,
            plaintext_token=token and "hfToken" not in stack_file.secret_keys,
            aws_region=str(region) if region else None,
        )
    except ConfigError as exc:
        raise ConfigError(exc.problems, source=stack_file.source) from None
