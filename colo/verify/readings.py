"""Where a server's startup log comes from: files collected elsewhere, or the cluster (colo.verify.cluster).

Offline, a directory holds one file per server named after it as colo names its objects: `<pair>-<role>.log`
(what `kubectl logs deploy/<pair> -c <role>` prints), and optionally `<pair>-<role>.metrics` (its /metrics).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from colo.files import MIB, FileRefused, read_head


@dataclass(frozen=True)
class NodeFacts:
    """What the GPU node says about itself (GPU feature discovery labels), for a calibration's provenance."""

    gpu_product: str | None = None
    driver: str | None = None


@dataclass(frozen=True)
class ServerReading:
    pair: str
    role: str
    source: str  # the file, or namespace/pod/container, the log was read from
    log_text: str | None = None
    metrics_text: str | None = None
    unread: str | None = None  # why there is no log: said plainly
    node: NodeFacts = NodeFacts()

    @property
    def name(self) -> str:
        return f"{self.pair}-{self.role}"


# vLLM prints its start-up figures within its first few thousand lines; a log of a server that has run for
# weeks is read no further than this.
LOG_HEAD_BYTES = 64 * MIB


def _text(path: Path) -> str:
    return read_head(path, LOG_HEAD_BYTES).decode("utf-8", errors="replace")


def read_log_dir(
    directory: Path, servers: list[tuple[str, str]], stems: Mapping[str, str] | None = None
) -> list[ServerReading]:
    """One reading per planned (pair, role); a missing file is a server that could not be read. `stems`:
    the file a server's log is under where it is not its own name (a process that stood in for several)."""
    if not directory.is_dir():
        return [
            ServerReading(pair, role, str(directory), unread=f"{directory} is not a directory")
            for pair, role in servers
        ]
    readings = []
    for pair, role in servers:
        stem = (stems or {}).get(f"{pair}-{role}", f"{pair}-{role}")
        log, metrics = directory / f"{stem}.log", directory / f"{stem}.metrics"
        if not log.is_file():
            readings.append(ServerReading(pair, role, str(log), unread=f"no {log.name} in {directory}"))
            continue
        readings.append(
            ServerReading(pair, role, str(log), _text(log), _text(metrics) if metrics.is_file() else None)
        )
    return readings


def read_log_file(path: Path, pair: str, role: str) -> ServerReading:
    try:
        return ServerReading(pair, role, str(path), _text(path))
    except FileRefused as exc:
        return ServerReading(pair, role, str(path), unread=f"cannot read {path}: {exc}")
