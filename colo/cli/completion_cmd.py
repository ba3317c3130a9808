"""`colo completion SHELL`: the completion script for bash, zsh or fish, written by shtab from the same argparse
tree the commands parse with, so a new flag completes without anyone editing a script."""

from __future__ import annotations

import argparse
from pathlib import Path

import shtab

from colo.cli.common import ExitCode

SHELLS = ("bash", "zsh", "fish")
# Flags whose value is a directory; every other Path-typed flag completes file names.
DIRECTORY_FLAGS = frozenset({"--out", "--cwd", "--logs"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")


def _mark_paths(parser: argparse.ArgumentParser) -> None:
    """Tell shtab which flags take a file or a directory (it completes nothing for a plain value)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_parser in action.choices.values():
                _mark_paths(sub_parser)
        elif action.type is Path:
            directory = DIRECTORY_FLAGS.intersection(action.option_strings)
            action.complete = shtab.DIRECTORY if directory else shtab.FILE  # type: ignore[attr-defined]


def completion_script(shell: str) -> str:
    from colo.cli import build_parser  # the whole tree: every command's module is imported here

    parser = build_parser(every_command=True)
    _mark_paths(parser)
    return str(shtab.complete(parser, shell=shell))


def run(args: argparse.Namespace) -> int:
    print(completion_script(args.shell))
    return ExitCode.OK
