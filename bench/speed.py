"""How long one whole-program evaluation takes under the mock runtime, as `colo render` and the tests run it.

Each run is a fresh process (imports included), so the numbers are what a user or CI waits for. They are
shown next to a bare `python -c "import pulumi"`, the floor any Pulumi program pays, and to the floor any
program declaring prod's resources pays: `import pulumi` and the provider SDK classes those resources are
declared with (pulumi_aws.ec2.LaunchTemplate loads every EC2 resource class: the provider SDKs load a whole
module's classes on its first use). Stacks: prod, and the
prod stack's pairs repeated to 25 and 100 pairs, to show the cost per pair; and `colo render --stack prod`
as a user runs it (the program, plus writing the manifests). `--fresh-bytecode` gives every run an empty
bytecode cache (PYTHONPYCACHEPREFIX), as the first run after an install or an upgrade pays it.

    python bench/speed.py [--runs 5] [--fresh-bytecode]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
PROGRAM = (
    "import sys; from colo.mock_run import run_program; from colo.stackfiles import load_stack_file; "
    "run_program(load_stack_file(__import__('pathlib').Path(sys.argv[1])))"
)


def seconds(command: list[str] | Callable[[int], list[str]], runs: int, fresh_bytecode: bool) -> float:
    """The median wall time of `command` (or the command of each run, by its number)."""
    # Bytecode is written and read as a user's Python does (PYTHONDONTWRITEBYTECODE, set, would make every
    # run compile everything); a first run unmeasured writes it.
    base = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    samples = []
    for run in range(0 if fresh_bytecode else -1, runs):
        index = run if run >= 0 else runs  # the warm-up run writes where no measured run does
        argv = command(index) if callable(command) else command
        with tempfile.TemporaryDirectory() as cache:
            env = {**base, "PYTHONPYCACHEPREFIX": cache} if fresh_bytecode else base
            started = time.perf_counter()
            subprocess.run(argv, cwd=REPO, check=True, capture_output=True, env=env)
            if run >= 0:
                samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def sdk_class(token: str) -> str | None:
    """The provider SDK class a resource type is declared with (module.Class); None for colo's own."""
    package, _, rest = token.partition(":")
    group, _, kind = rest.partition(":")
    if package == "aws":
        return f"pulumi_aws.{group.split('/')[0]}.{kind}"
    if package == "kubernetes":
        name, _, version = group.partition("/")
        name = name.removesuffix(".k8s.io")
        if "." in name:  # a custom resource (a group of its own, e.g. monitoring.coreos.com)
            return "pulumi_kubernetes.apiextensions.CustomResource"
        return f"pulumi_kubernetes.{name}.{version}.{kind}"
    if package == "pulumi" and group == "providers":
        return f"pulumi_{kind}.Provider"
    return None


def sdk_floor(stack: Path) -> list[str]:
    """`import pulumi` and every provider SDK class the stack's resources are declared with, as one command.
    Each class is touched, not only imported: the SDKs load their modules lazily, on first use."""
    listing = (
        "import json, sys; from colo.mock_run import run_program; from colo.stackfiles import load_stack_file; "
        "print(json.dumps(sorted({r.type for r in run_program(load_stack_file(__import__('pathlib')"
        ".Path(sys.argv[1]))).mocks.resources})))"
    )
    found = subprocess.run(
        [sys.executable, "-c", listing, str(stack)], cwd=REPO, check=True, capture_output=True, text=True
    )
    classes = sorted({c for token in json.loads(found.stdout) if (c := sdk_class(token)) is not None})
    modules = sorted({c.rsplit(".", 1)[0] for c in classes})
    return [sys.executable, "-c", "; ".join([f"import pulumi, {', '.join(modules)}", *classes])]


def stack_with_pairs(count: int, directory: Path) -> Path:
    """The prod stack with its pairs repeated (and renamed) to `count`; enough nodes for all of them."""
    source = yaml.safe_load((REPO / "stacks" / "Pulumi.prod.yaml").read_text())
    config = source["config"]
    pairs = config["colo:pairs"]
    config["colo:pairs"] = [
        {**copy.deepcopy(pairs[i % len(pairs)]), "name": f"pair-{i:03d}"} for i in range(count)
    ]
    config["colo:nodePool"]["spareGpus"] = 0
    # Pairs on many nodes share the model volume only if it attaches to many nodes.
    config["colo:storage"] = {
        **config.get("colo:storage", {}),
        "storageClass": "efs",
        "accessMode": "ReadWriteMany",
    }
    path = directory / f"Pulumi.pairs{count}.yaml"
    path.write_text(yaml.safe_dump(source))
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--fresh-bytecode", action="store_true", help="an empty bytecode cache for every run")
    parser.add_argument("--no-scaling", action="store_true", help="leave out the 25- and 100-pair stacks")
    args = parser.parse_args()
    python = sys.executable
    floor = seconds([python, "-c", "import pulumi"], args.runs, args.fresh_bytecode)
    prod_sdk = sdk_floor(REPO / "stacks" / "Pulumi.prod.yaml")
    rows = [
        ("python -c 'import pulumi'", 0, floor),
        ("  + prod's provider classes", 0, seconds(prod_sdk, args.runs, args.fresh_bytecode)),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        stacks = [("prod", 3, REPO / "stacks" / "Pulumi.prod.yaml")]
        if not args.no_scaling:
            stacks += [(f"prod x {n}", n, stack_with_pairs(n, Path(tmp))) for n in (25, 100)]
        for label, pairs, path in stacks:
            program = [python, "-c", PROGRAM, str(path)]
            rows.append((label, pairs, seconds(program, args.runs, args.fresh_bytecode)))

        def render(run: int) -> list[str]:
            return [python, "-m", "colo", "render", "--stack", "prod", "--out", f"{tmp}/render-{run}"]

        rows.append(("colo render --stack prod", 3, seconds(render, args.runs, args.fresh_bytecode)))
    cache = "an empty bytecode cache" if args.fresh_bytecode else "bytecode cached"
    print(f"median of {args.runs} runs, fresh process each, {cache}\n")
    sdk = rows[1][2]
    print(f"{'stack':<28} {'pairs':>5} {'seconds':>8} {'x import pulumi':>16} {'x + providers':>14}")
    for label, pairs, value in rows:
        print(f"{label:<28} {pairs:>5} {value:>8.2f} {value / floor:>16.1f} {value / sdk:>14.1f}")
    if not args.no_scaling:
        (_, p1, t1), (_, p2, t2) = rows[3], rows[4]
        print(f"\nper pair between {p1} and {p2} pairs: {(t2 - t1) / (p2 - p1) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
