"""A private CUDA MPS control daemon for one run, arranged as a pair's pod arranges it: a pipe and a log directory
of its own (under the run's workdir), the servers started as its clients with the pod's environment, and the
daemon told to quit at the end whatever happened.

    nvidia-cuda-mps-control -d                      with CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY set
    echo get_server_list | nvidia-cuda-mps-control  answers once the daemon listens (its health check)
    echo quit | nvidia-cuda-mps-control             ends it; the PID in its pipe directory's pid file is checked

A client that finds no daemon at its pipe directory silently runs as a plain CUDA context, so after every start the
runner records which of its servers' processes the MPS server lists as clients. A server that must not be a client
while the daemon runs gets a pipe directory where no daemon listens.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONTROL = "nvidia-cuda-mps-control"
PID_FILE = "nvidia-cuda-mps-control.pid"  # the daemon writes it into its pipe directory (NVIDIA's MPS docs)
MPS_PROCESSES = ("nvidia-cuda-mps-control", "nvidia-cuda-mps-server")


def _alive(pid: int) -> bool:
    """Running, not merely unreaped: a zombie daemon has ended."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def group_pids(leader: int) -> set[int]:
    """Every process in the process group `leader` started (vLLM's API server and its engine core)."""
    pids: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == leader:  # after the command: state, ppid, pgrp
                pids.add(int(entry.name))
    return pids


def resident_mib(names: Iterable[str] = MPS_PROCESSES) -> dict[str, float]:
    """Resident host memory of the MPS processes on the machine, by `pid name`."""
    found: dict[str, float] = {}
    wanted = set(names)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError):
            name = (entry / "comm").read_text().strip()
            if name not in wanted:
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    found[f"{entry.name} {name}"] = round(int(line.split()[1]) / 1024, 1)
    return found


def shm_files(directory: Path = Path("/dev/shm")) -> dict[str, int]:
    """The MPS server's shared memory regions (mps.shm.<uid>.<pid>) and their sizes in bytes."""
    try:
        return {p.name: p.stat().st_size for p in directory.iterdir() if p.name.startswith("mps")}
    except OSError:
        return {}


@dataclass
class MpsDaemon:
    root: Path  # <workdir>/mps: pipe/, log/ and an empty none/ for servers that must not be clients
    env: Mapping[str, str]  # the run's environment (CUDA_VISIBLE_DEVICES among it)
    executable: str = CONTROL
    started: bool = False

    @property
    def pipe_dir(self) -> Path:
        return self.root / "pipe"

    @property
    def log_dir(self) -> Path:
        return self.root / "log"

    @property
    def no_daemon_dir(self) -> Path:
        return self.root / "none"

    def _env(self) -> dict[str, str]:
        return {
            **self.env,
            "CUDA_MPS_PIPE_DIRECTORY": str(self.pipe_dir),
            "CUDA_MPS_LOG_DIRECTORY": str(self.log_dir),
        }

    def client_env(self, client: bool) -> dict[str, str]:
        """What a server's environment adds: the daemon's pipe directory, or one where no daemon listens."""
        if client:
            return {
                "CUDA_MPS_PIPE_DIRECTORY": str(self.pipe_dir),
                "CUDA_MPS_LOG_DIRECTORY": str(self.log_dir),
            }
        return {"CUDA_MPS_PIPE_DIRECTORY": str(self.no_daemon_dir)}

    def ask(self, command: str, timeout_s: float = 10.0) -> tuple[int, str]:
        """One command on the daemon's control socket: its exit code and answer."""
        try:
            done = subprocess.run(
                [self.executable],
                input=command + "\n",
                capture_output=True,
                text=True,
                env=self._env(),
                timeout=timeout_s,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return -1, f"{type(exc).__name__}: {exc}"
        return done.returncode, (done.stdout + done.stderr).strip()

    def daemon_pid(self) -> int | None:
        try:
            return int((self.pipe_dir / PID_FILE).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def start(self, timeout_s: float = 30.0) -> dict[str, Any]:
        for directory in (self.pipe_dir, self.log_dir, self.no_daemon_dir):
            directory.mkdir(parents=True, exist_ok=True)
        try:
            launched = subprocess.run(
                [self.executable, "-d"], capture_output=True, text=True, env=self._env(), timeout=30
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return {"outcome": "failed", "error": f"{type(exc).__name__}: {exc}"}
        self.started = launched.returncode == 0
        deadline = time.monotonic() + timeout_s
        code, answer = -1, launched.stderr.strip()
        while self.started and time.monotonic() < deadline:
            code, answer = self.ask("get_server_list")
            if code == 0:
                break
            time.sleep(0.5)
        return {
            "outcome": "ready" if self.started and code == 0 else "failed",
            "exit_code": launched.returncode,
            "answer": answer,
            "daemon_pid": self.daemon_pid(),
            "pipe_dir": str(self.pipe_dir),
        }

    def status(self, servers: Mapping[str, set[int]]) -> dict[str, Any]:
        """The MPS servers, their clients, and which of the run's servers (by their processes) are among them."""
        _, listing = self.ask("get_server_list")
        mps_servers = [int(word) for word in listing.split() if word.isdigit()]
        clients: set[int] = set()
        for server in mps_servers:
            _, answer = self.ask(f"get_client_list {server}")
            clients |= {int(word) for word in answer.split() if word.isdigit()}
        return {
            "mps_servers": mps_servers,
            "clients": sorted(clients),
            "attached": {name: bool(pids & clients) for name, pids in servers.items()},
            "resident_mib": resident_mib(),
            "dev_shm": shm_files(),
        }

    def stop(self, timeout_s: float = 20.0) -> dict[str, Any]:
        """`quit`; the daemon's own PID (from its pid file) is signalled only if it outlives the timeout."""
        pid = self.daemon_pid()
        code, answer = self.ask("quit")
        deadline = time.monotonic() + timeout_s
        while pid is not None and _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        forced = False
        if pid is not None and _alive(pid):
            forced = True
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            time.sleep(2)
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self.started = False
        return {"exit_code": code, "answer": answer, "daemon_pid": pid, "forced": forced}
