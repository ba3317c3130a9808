"""CUDA-graph memory of the public startup logs that print it, beside colo's figures for the same settings.

    python bench/gpu/graph_logs.py

`bench/accuracy.py` scores the KV pool, which the graph estimate enters only where the release subtracts it;
this lists the graph figures themselves for every sized log that prints one: vLLM's estimate ("Estimated CUDA
graph memory", "CUDA graph pool memory ... (estimated)") and what the capture took ("Graph capturing finished
... took", "(actual)"), each beside colo's, with the log's release, GPU and graph counts. Logs named in an
`informed_by` list are marked; none of the graph constants is set from these logs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: bench is not a package on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.accuracy import DATA, Skip, _size, arguments, informed_ids, local_hub
from colo.catalog import GIB
from colo.catalog.data import parse_yaml


def _pct(colo: float, logged: float) -> str:
    return f"{(colo - logged) / logged * 100:+.0f}%" if logged > 0 else "-"


def rows(entries: list[dict[str, Any]], informed: set[str]) -> list[str]:
    lines = []
    for entry in entries:
        estimate, captured = entry.get("cuda_graph_estimate_gib"), entry.get("cuda_graph_gib")
        if not entry.get("usable") or (estimate is None and captured is None):
            continue
        try:
            result = _size(arguments(entry))
        except Skip as exc:
            lines.append(f"  {entry['id']:52} not sized: {str(exc)[:80]}")
            continue
        graphs = result.budget.graphs
        colo_estimate = getattr(graphs, "estimate_bytes", graphs.bytes) / GIB
        colo_captured = graphs.bytes / GIB
        cells = []
        if estimate is not None:
            cells.append(
                f"estimate {estimate:5.2f} colo {colo_estimate:5.2f} ({_pct(colo_estimate, estimate)})"
            )
        if captured is not None and captured > 0:
            cells.append(
                f"captured {captured:5.2f} colo {colo_captured:5.2f} ({_pct(colo_captured, captured)})"
            )
        mark = " [informed a constant]" if entry["id"] in informed else ""
        lines.append(
            f"  {entry['id']:52} {entry.get('vllm_version')!s:>8} {result.gpu.name:12} graphs {graphs.count:3}  "
            + "  ".join(cells)
            + mark
        )
    return lines


def main() -> int:
    entries = parse_yaml(DATA.read_text())["entries"]
    with local_hub():
        print("\n".join(rows(entries, informed_ids())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
