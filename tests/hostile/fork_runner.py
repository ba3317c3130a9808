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

import json
import os
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

TIMEOUT_S = 60.0


def _preload() -> None:
    """Everything `colo plan` and `colo render` import, so that forked children start warm."""
    import colo.cli.plan_cmd
    import colo.cli.render_cmd
    import colo.mock_run
    import colo.program
    import colo.render  # noqa: F401
    from colo.components import kubernetes, node_pool  # noqa: F401


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
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for run in runs:
            results[run["id"]] = run_one(run["argv"], run["cwd"], Path(scratch))
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
