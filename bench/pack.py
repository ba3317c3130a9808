"""How long `colo pack` takes for ten LLMs (packs/ten-models.yaml: ten LLMs, two embedding models, a reranker
on two of them, every priced instance family of us-east-1), in a fresh process each run.

Both clocks are shown: wall time is what a user waits for; CPU time is the same figure without the other
processes a shared machine runs, which can stretch wall time several-fold. Imports are counted apart.

    python bench/pack.py [--runs 3] [--alternatives 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "packs" / "ten-models.yaml"
ONE_RUN = """
import json, sys, time
started_wall, started_cpu = time.perf_counter(), time.process_time()
from pathlib import Path
from colo.pack.explain import pack
from colo.pack.requirements import load_pack_file
imported_wall, imported_cpu = time.perf_counter(), time.process_time()
result = pack(load_pack_file(Path(sys.argv[1])), int(sys.argv[2]))
print(json.dumps({
    "import_wall": imported_wall - started_wall,
    "import_cpu": imported_cpu - started_cpu,
    "pack_wall": time.perf_counter() - imported_wall,
    "pack_cpu": time.process_time() - imported_cpu,
    "layouts": len(result.layouts),
    "best": f"{result.layouts[0].nodes} x {result.layouts[0].candidate.name} "
            f"${result.layouts[0].usd_per_hour:.3f}/h",
}))
"""


def one_run(alternatives: int) -> dict[str, float | str]:
    done = subprocess.run(
        [sys.executable, "-c", ONE_RUN, str(MODELS), str(alternatives)],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    figures: dict[str, float | str] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--alternatives", type=int, default=3)
    args = parser.parse_args()
    runs = [one_run(args.alternatives) for _ in range(args.runs)]
    print(
        f"colo pack, {MODELS.relative_to(REPO)}, {args.alternatives} alternatives, median of {args.runs} runs:"
    )
    for key in ("pack_wall", "pack_cpu", "import_wall", "import_cpu"):
        values = [float(run[key]) for run in runs]
        print(
            f"  {key.replace('_', ' '):12} {statistics.median(values):6.2f} s  (min {min(values):.2f}, max {max(values):.2f})"
        )
    print(f"  best layout  {runs[0]['best']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
