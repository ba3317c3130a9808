"""`colo diff`: plan a base and a head config and print what changes, as markdown for a PR comment.

Exit codes: 0 the head side fits (changed or not), 1 a pair stops fitting or the head side does not fit,
2 either side's config is invalid (the message says which side).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from colo.cli.common import ExitCode, add_stack_arguments, load_config, read_stack_file
from colo.cli.plan_cmd import build_plan
from colo.cli.progress import step
from colo.config import StackConfig
from colo.diff import markdown
from colo.diff.objects import ObjectChanges, object_changes
from colo.diff.pictures import picture_files, pictures_markdown
from colo.diff.plan_changes import plan_changes
from colo.diff.rendered import rendered_objects
from colo.diff.sides import stack_file_at
from colo.errors import ConfigError
from colo.output_dir import replace_directory
from colo.plan.stack import Plan
from colo.stackfiles import StackFile, load_stack_file, require_project, stack_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stack_arguments(parser, side="head side")
    base = parser.add_mutually_exclusive_group(required=True)
    base.add_argument(
        "--base", metavar="REF", help="base side: the same stack file at this git ref (absent there: empty)"
    )
    base.add_argument("--base-config", type=Path, help="base side: any file shaped like a Pulumi stack file")
    parser.add_argument(
        "--pictures",
        type=Path,
        metavar="DIR",
        help="also write each GPU's budget before and after as SVG into DIR (gpu-<n>-base.svg, "
        "gpu-<n>-head.svg), shown side by side in the comment; DIR follows colo render's rules for --out",
    )


@dataclass(frozen=True)
class Side:
    label: str  # how the comment names where this side came from
    stack_file: StackFile | None  # None: the stack does not exist on this side
    config: StackConfig | None


class SideError(Exception):
    def __init__(self, side: str, source: str, error: ConfigError) -> None:
        self.side, self.source, self.error = side, source, error
        super().__init__(f"{side} side ({source}): {error.render()}")


def _head(args: argparse.Namespace) -> tuple[Side, Path, Path]:
    """The head side, with the paths its base is read from at a git ref (the project's files)."""
    start: Path = args.cwd or Path.cwd()
    label = str(args.config) if args.stack is None else f"stack {args.stack}"
    try:
        project = require_project(start)
        if args.stack is not None:
            path = stack_path(args.stack, project.parent)
            label = str(path.relative_to(project.parent))
        else:
            path = (start / args.config).resolve()
        stack_file = read_stack_file(args)
        return Side(label, stack_file, load_config(stack_file)), path, project
    except ConfigError as exc:
        raise SideError("head", label, exc) from None


def _base(args: argparse.Namespace, head_path: Path, project: Path, stack: str) -> Side:
    start: Path = args.cwd or Path.cwd()
    if args.base_config is not None:
        label = str(args.base_config)
    else:
        label = f"{args.base}:{head_path.relative_to(project.parent) if args.stack else head_path.name}"
    try:
        if args.base_config is not None:
            base_config = start / args.base_config
            stack_file: StackFile | None = load_stack_file(base_config, project_file=project, stack=stack)
        else:
            stack_file = stack_file_at(args.base, head_path, project, stack)
        if stack_file is None:
            return Side(f"{label} (absent there, so every pair is added)", None, None)
        return Side(label, stack_file, load_config(stack_file))
    except ConfigError as exc:
        raise SideError("base", label, exc) from None


def _objects(base: Side, before: Plan | None, head: Side, after: Plan) -> ObjectChanges | str:
    """Render both sides; a side that does not fit declares nothing, so there is nothing to compare."""
    if not after.feasible:
        return "the head side does not fit, so the program would declare nothing"
    if before is not None and not before.feasible:
        return "the base side does not fit, so there is nothing to compare against"
    assert head.stack_file is not None
    with step("diff", f"rendering the head side ({head.label})"):
        after_objects = rendered_objects(head.stack_file)
    before_objects: dict[str, Mapping[str, Any]] = {}
    if base.stack_file is not None:
        with step("diff", f"rendering the base side ({base.label})"):
            before_objects = rendered_objects(base.stack_file)
    return object_changes(before_objects, after_objects)


def run(args: argparse.Namespace) -> int:
    stack = args.stack or (args.config.name.removeprefix("Pulumi.").removesuffix(".yaml"))
    try:
        head, head_path, project = _head(args)
        base = _base(args, head_path, project, stack)
    except SideError as exc:
        print(markdown.render_invalid(stack, exc.side, exc.source, exc.error.problems), end="")
        print(str(exc), file=sys.stderr)
        return ExitCode.INVALID
    assert head.config is not None
    before = build_plan(base.config) if base.config is not None else None
    after = build_plan(head.config)
    changes = plan_changes(before, after)
    objects = _objects(base, before, head, after)
    comment = markdown.render(stack, base.label, head.label, changes, objects)
    if args.pictures is not None:
        files = picture_files(before, after)
        replace_directory(
            args.pictures if args.cwd is None else args.cwd / args.pictures, files, flag="--pictures"
        )
        comment += "\n" + "\n".join(pictures_markdown(files, args.pictures.as_posix()))
    print(comment, end="")
    return ExitCode.OK if changes.after_fits else ExitCode.FAILS
