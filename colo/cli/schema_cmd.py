"""`colo schema`: the stack file's JSON Schema, for editors (yaml-language-server) and other tools."""

from __future__ import annotations

import argparse
import json

from colo.cli.common import ExitCode
from colo.config.generate import stack_file_schema


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options: the schema is colo's, not a stack's


def run(args: argparse.Namespace) -> int:
    del args
    print(json.dumps(stack_file_schema(), indent=2))
    return ExitCode.OK
