"""`colo diff --pictures DIR`: each GPU's budget before and after as SVG files, and the markdown that shows
them side by side in the comment (paths as the user gave DIR, so a CI job that uploads DIR beside the comment
keeps them working)."""

from __future__ import annotations

from pathlib import PurePosixPath

from colo.plan.budget_bars import svg_files
from colo.plan.stack import Plan


def picture_files(before: Plan | None, after: Plan) -> dict[str, str]:
    """gpu-<n>-base.svg and gpu-<n>-head.svg for every GPU a side plans (a side that does not fit: none)."""
    files: dict[str, str] = {}
    for side, plan in (("base", before), ("head", after)):
        if plan is None or not plan.feasible:
            continue
        for name, text in svg_files(plan, "").items():
            files[name.replace(".svg", f"-{side}.svg")] = text
    return files


def pictures_markdown(files: dict[str, str], directory: str) -> list[str]:
    """A table of GPUs, base on the left and head on the right, each cell an image of its SVG."""
    gpus = sorted({name.rsplit("-", 1)[0] for name in files}, key=lambda name: int(name.split("-")[1]))
    if not gpus:
        return []
    lines = ["### GPU budgets", "", "| GPU | base | head |", "|---|---|---|"]
    for gpu in gpus:
        cells = [
            f"![{gpu} {side}]({PurePosixPath(directory) / f'{gpu}-{side}.svg'})"
            if f"{gpu}-{side}.svg" in files
            else "(none)"
            for side in ("base", "head")
        ]
        lines.append(f"| {gpu.replace('-', ' ')} | {cells[0]} | {cells[1]} |")
    return [*lines, ""]
