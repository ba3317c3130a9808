"""A layout as a stack file `colo plan` accepts as it is, and the rule for writing one.

The file says on its first line that `colo pack` wrote it; pack replaces only such files, so a stack someone
wrote by hand (or `pulumi config set` rewrote) is never overwritten.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from colo.config import CONFIG_KEYS
from colo.errors import ArgumentsError, Problem
from colo.pack.search import Layout

WRITTEN_BY = "# Written by colo pack"


class _PlainDumper(yaml.SafeDumper):
    """Writes a server shared by several pairs out in full each time: no YAML anchors for readers to chase."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def stack_text(layout: Layout, region: str, origin: str) -> str:
    price = layout.candidate.price
    instance = layout.candidate.instance
    header = [
        f"{WRITTEN_BY} from {origin}: {layout.nodes} x {instance.name} ({layout.gpus} x {instance.gpu}) in {region},",
        f"# ${layout.usd_per_hour:.3f}/h on demand at ${price.usd_per_hour:g}/h per node (price of {price.date}:",
        f"# {price.source}).",
        "# colo pack replaces this file only while its first line says colo pack wrote it.",
    ]
    config: dict[str, Any] = {"aws:region": region}
    config.update({f"colo:{key}": layout.values[key] for key in CONFIG_KEYS if layout.values.get(key)})
    body = yaml.dump(
        {"config": config}, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False, width=110
    )
    return "\n".join(header) + "\n" + body


def written_by_pack(path: Path) -> bool:
    with path.open() as handle:
        return handle.readline().startswith(WRITTEN_BY)


def ensure_writable(path: Path) -> None:
    """Refuse a target that exists and that colo pack did not write."""
    if path.exists() and not written_by_pack(path):
        raise ArgumentsError(
            [
                Problem(
                    "--write",
                    f"{path} exists and colo pack did not write it (its first line is not '{WRITTEN_BY}'); "
                    f"choose another name, or move that file away first",
                )
            ]
        )


def write_stack(path: Path, text: str) -> None:
    """Write the stack file; refuse to replace a file colo pack did not write."""
    ensure_writable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
