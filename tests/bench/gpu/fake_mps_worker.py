"""A stand-in for bench/gpu/measure_mps.py's PyTorch worker: the same protocol on stdout, with invented memory.

It holds "GPU memory" in a file under FAKE_GPU_STATE (which the fake nvidia-smi adds up): a plain context, or, as
a client of the fake MPS daemon (tests/bench/gpu/fake_mps_control.sh), a client context by its thread percentage,
and the MPS server's memory in a file of its own when it is the first client. The figures are invented.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PLAIN_CONTEXT, PLAIN_CUBLAS = 621, 118
SERVER = 66
CLIENT_CONTEXT = {100: 600, 50: 450, 25: 300}
CLIENT_CUBLAS = {100: 120, 50: 100, 25: 80}
TOTAL = 143_771 * 1024**2


def main() -> int:
    mode = sys.argv[1]
    state = Path(os.environ["FAKE_GPU_STATE"])
    pipe = os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "")
    client = bool(pipe) and (Path(pipe) / "control").exists()
    share = int(os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "100"))
    mine = state / str(os.getpid())
    if client:
        (Path(pipe) / "clients").mkdir(exist_ok=True)
        (Path(pipe) / "clients" / str(os.getpid())).write_text(str(share))
        server = state / "mps-server"
        if not server.exists():
            server.write_text(str(SERVER))
    context = CLIENT_CONTEXT[share] if client else PLAIN_CONTEXT
    mine.write_text(str(context))
    try:
        if mode == "pinned":
            limit = int(sys.argv[2])
            reports = os.environ.get("FAKE_PINNED_REPORTS") == "1"
            total = limit if reports else TOTAL
            print(f"pinned {total - 1024**3} {total} {TOTAL} 1 0", flush=True)
            return 0
        sms = 132 * share // 100 if client else 132
        print(f"context {TOTAL // 2} {TOTAL} {sms} {os.getpid()}", flush=True)
        sys.stdin.readline()
        mine.write_text(str(context + (CLIENT_CUBLAS[share] if client else PLAIN_CUBLAS)))
        print(f"cublas {TOTAL // 2} {TOTAL}", flush=True)
        sys.stdin.readline()
    finally:
        mine.unlink(missing_ok=True)
        if client:
            (Path(pipe) / "clients" / str(os.getpid())).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
