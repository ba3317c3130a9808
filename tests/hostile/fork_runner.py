"""Run many `colo` command lines, each in a child forked from one process that imported colo once.

The hostile-input corpus starts this as a subprocess with a memory cap (setrlimit in preexec_fn), which every
child inherits; each child also has its own timeout. A child runs the same entry point as the `colo` console
script (colo.cli:main, less the SIGPIPE handler) in its own working directory, with stdout and stderr captured, and ends as that
command would: with its exit code, or with a traceback and 1 on an uncaught exception. Importing colo,
Pulumi and the provider SDKs once instead of once per command line is what keeps the corpus fast.

    stdin:  JSON list of {"id": str, "argv": [str], "cwd": str}
    stdout: JSON {id: {"code": int | null, "stdout": str, "stderr": str}}   (null code: timed out)
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

TIMEOUT_S = 60.0
# The provider's modules colo declares objects of, which its SDK imports on first use, and the Hub client, which
# reads a model outside the catalog.
IMPORTED_ON_FIRST_USE = (
    "pulumi_kubernetes.apps.v1",
    "pulumi_kubernetes.core.v1",
    "pulumi_kubernetes.meta.v1",
    "pulumi_kubernetes.networking.v1",
    "huggingface_hub.hf_api",
)


def _preload() -> None:
    """Everything `colo plan` and `colo render` import, and what a plan reads on first use, so that forked
    children start warm."""
    for name in IMPORTED_ON_FIRST_USE:
        importlib.import_module(name)
    import colo.cli.plan_cmd
    import colo.cli.render_cmd
    import colo.mock_run
    import colo.program
    import colo.render  # noqa: F401
    from colo.components import kubernetes, node_pool  # noqa: F401

    _warm_up()


def _warm_up() -> None:
    """A plan of the project's local stack here, its output discarded: every child then starts with colo's
    catalogs and vLLM tables parsed (their caches fill on first use; about half a second of each child's run).
    A render is not warmed up this way: the Pulumi runtime leaves threads behind, and a fork copies only the
    thread that forks, not the locks the others may hold."""
    from colo.cli import main

    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
        code = main(["plan", "--stack", "local"])
    if code != 0 or threading.active_count() != 1:
        raise RuntimeError(f"the warm-up plan exited {code} and left {threading.active_count()} threads")


def _child(argv: list[str], cwd: str, out: Path, err: Path) -> NoReturn:
    code = 1
    try:
        os.chdir(cwd)
        os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 1)
        os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
        from colo.cli import main

        code = main(argv)
    except SystemExit as exc:  # argparse, as the interpreter would end it
        if isinstance(exc.code, int) or exc.code is None:
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except BaseException:  # what an uncaught exception shows a user
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run_one(argv: list[str], cwd: str, scratch: Path, timeout: float = TIMEOUT_S) -> dict[str, Any]:
    out, err = scratch / "stdout", scratch / "stderr"
    pid = os.fork()
    if pid == 0:
        _child(argv, cwd, out, err)
    deadline = time.monotonic() + timeout
    code: int | None = None
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            break
        time.sleep(0.002)
    read = {
        name: path.read_text(errors="replace") if path.exists() else ""
        for name, path in (("stdout", out), ("stderr", err))
    }
    return {"code": code, **read}


def main() -> None:
    runs = json.load(sys.stdin)
    _preload()
    # What the warm-up left is moved out of the collector's reach, so that a child's collections do not touch,
    # and so copy, every page of it (the gc.freeze documentation's advice before fork): a quarter of each run.
    gc.freeze()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for run in runs:
            results[run["id"]] = run_one(run["argv"], run["cwd"], Path(scratch))
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
