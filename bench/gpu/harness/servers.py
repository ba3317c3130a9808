"""Start one `vllm serve` process, wait for its /health, and stop it: only the processes this module started.

Each server runs in a process group of its own (vLLM's engine core is a child process), so stopping it
signals that group by its id and nothing else on the machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

Outcome = Literal["ready", "exited", "timeout"]


@dataclass(frozen=True)
class ServerSpec:
    """One server as `colo plan --format json` derives it, plus what the run adds."""

    name: str  # the plan's server name, e.g. dense-llm
    port: int
    args: tuple[str, ...]  # the plan's vllm_args, unchanged and in order
    extra_args: tuple[str, ...] = ()  # appended after the plan's own: --load-format dummy
    env: Mapping[str, str] = field(default_factory=dict)
    cpus: frozenset[int] | None = None  # the host CPUs its processes run on (None: the starter's)

    def command(self, executable: str) -> list[str]:
        return [executable, "serve", *self.args, *self.extra_args]


@dataclass
class Running:
    spec: ServerSpec
    process: subprocess.Popen[bytes]
    log_path: Path
    log_file: IO[bytes]
    started_at: float
    ready_s: float | None = None  # seconds from start to the first healthy answer
    exit_code: int | None = None


def start(
    spec: ServerSpec, *, executable: str, workdir: Path, log_path: Path, env: Mapping[str, str]
) -> Running:
    """Launch the server with stdout and stderr in `log_path`, in a new session (its own process group)."""
    log_file = log_path.open("wb")
    cpus = spec.cpus
    process = subprocess.Popen(
        spec.command(executable),
        cwd=workdir,
        env={**env, **spec.env},
        stdout=log_file,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        # set in the child before vLLM starts, so its engine core and every thread inherit it
        preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus),
    )
    return Running(spec, process, log_path, log_file, time.monotonic())


def healthy(port: int, timeout_s: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=timeout_s) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def wait_ready(running: Running, *, timeout_s: float, poll_s: float = 1.0) -> Outcome:
    """Until /health answers 200, the process exits, or the time is up."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = running.process.poll()
        if code is not None:
            running.exit_code = code
            return "exited"
        if healthy(running.spec.port):
            running.ready_s = round(time.monotonic() - running.started_at, 1)
            return "ready"
        time.sleep(poll_s)
    return "timeout"


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group this module created: the leader's pid
        os.killpg(process.pid, sig)


def stop(running: Running, *, grace_s: float = 30.0) -> None:
    """SIGTERM to the server's group, SIGKILL to it after `grace_s`; then close its log."""
    process = running.process
    if process.poll() is None:
        _signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait(timeout=10)
    # children the leader left behind are still in its group
    _signal_group(process, signal.SIGKILL)
    if running.exit_code is None:
        running.exit_code = process.returncode
    running.log_file.close()


def stop_all(servers: Sequence[Running], *, grace_s: float = 30.0) -> None:
    """Stop in reverse start order, as a pod's containers stop."""
    for running in reversed(servers):
        stop(running, grace_s=grace_s)
