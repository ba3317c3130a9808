"""A stand-in for `vllm serve` in the GPU harness's tests: vLLM 0.22.0's startup lines, then its HTTP API.

It checks what the real one would refuse first (the model directory, its tokenizer, the port, a tensor-parallel
size its visible GPUs cannot hold) and refuses a utilization above FAKE_VLLM_FREE_FRACTION the way vLLM's startup
check words it. While it runs it holds FAKE_VLLM_MIB of "GPU memory" in a file under FAKE_GPU_STATE, which the
fake nvidia-smi adds up: one file, or one per GPU of CUDA_VISIBLE_DEVICES (`<gpu>-<pid>`) where that is set. At
tensor parallel N every rank prints its own lines with the worker prefix vLLM's multiprocessing workers carry.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TOTAL_GIB = 139.80


def _arg(args: list[str], flag: str, default: str | None = None) -> str | None:
    return args[args.index(flag) + 1] if flag in args else default


def rank_lines(tp: int) -> list[str]:
    """What each worker prints of its own: its profile and its KV memory, rank r's pool 1.75 + r/100 GiB."""
    lines = []
    for rank in range(tp):
        prefix = f"(Worker_TP{rank} pid={4000 + rank}) "
        lines += [
            prefix + "DEBUG 12-02 10:00:08 [gpu_worker.py:1] Memory profiling takes 3.1 seconds. "
            "torch peak memory increase: 0.40 GiB; non-torch forward increase memory: "
            f"{0.5 + rank / 100:.2f} GiB; weights memory: 1.12 GiB.",
            prefix
            + f"INFO 12-02 10:00:09 [gpu_worker.py:1] Available KV cache memory: {1.75 + rank / 100:.2f} GiB",
        ]
    return lines


def startup_lines(args: list[str]) -> list[str]:
    util = float(_arg(args, "--gpu-memory-utilization", "0.92") or 0.92)
    max_len = int(_arg(args, "--max-model-len", "8192") or 8192)
    tp = int(_arg(args, "--tensor-parallel-size", "1") or 1)
    if tp > 1:
        return [*rank_lines(tp), f"INFO 12-02 10:00:12 [gpu_worker.py:1] util {util}"]
    return [
        "INFO 12-02 10:00:00 [api_server.py:1] vLLM API server version 0.22.0",
        "INFO 12-02 10:00:05 [gpu_model_runner.py:1] Model loading took 1.1200 GiB memory and 2.5 seconds",
        "INFO 12-02 10:00:09 [gpu_worker.py:1] Available KV cache memory: 1.80 GiB",
        "INFO 12-02 10:00:09 [kv_cache_utils.py:1] GPU KV cache size: 16,880 tokens",
        f"INFO 12-02 10:00:09 [kv_cache_utils.py:1] Maximum concurrency for {max_len:,} tokens per request: 2.06x",
        "INFO 12-02 10:00:12 [gpu_model_runner.py:1] Graph capturing finished in 3 secs, took 0.13 GiB",
        f"DEBUG 12-02 10:00:12 [gpu_worker.py:1] util {util}",
    ]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        sys.stdout.write("INFO:     " + format % args + "\n")

    def _json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._json(200, {})
        elif self.path == "/metrics":
            body = b'vllm:cache_config_info{block_size="16",num_gpu_blocks="1055"} 1.0\n'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self._json(404, {"error": self.path})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/v1/completions":
            self._stream(int(body["max_tokens"]))
        elif self.path == "/v1/embeddings":
            self._json(
                200,
                {"data": [{"embedding": [0.0] * 4}], "usage": {"prompt_tokens": len(body["input"].split())}},
            )
        elif self.path == "/rerank":
            self._json(200, {"results": [{"index": 0, "relevance_score": 0.5}]})
        else:
            self._json(404, {"error": self.path})

    def _stream(self, tokens: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i in range(tokens):
            self.wfile.write(f"data: {json.dumps({'choices': [{'text': f' w{i}'}]})}\n\n".encode())
            self.wfile.flush()
            time.sleep(0.001)
        usage = {"choices": [], "usage": {"completion_tokens": tokens}}
        self.wfile.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())


def mps_connect() -> Path | None:
    """As CUDA does: a client of the MPS daemon whose control socket is in CUDA_MPS_PIPE_DIRECTORY, else a plain
    context. The fake daemon (tests/bench/gpu/fake_mps_control.sh) lists the files under clients/ as clients."""
    pipe = os.environ.get("CUDA_MPS_PIPE_DIRECTORY")
    if not pipe or not (Path(pipe) / "control").exists():
        print("fake vllm: plain CUDA context (no MPS daemon)", flush=True)
        return None
    share = os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "100")
    print(f"fake vllm: MPS client at {share} % threads", flush=True)
    clients = Path(pipe) / "clients"
    clients.mkdir(exist_ok=True)
    mine = clients / str(os.getpid())
    mine.write_text(share)
    return mine


def main() -> int:
    args = sys.argv[1:]
    if not args or args[0] != "serve":
        print("usage: vllm serve MODEL ...", file=sys.stderr)
        return 2
    model, options = args[1], args[2:]
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        if not (Path(model) / name).is_file():
            print(f"OSError: {model} has no {name} (cwd {os.getcwd()})", flush=True)
            return 1
    if "--load-format" not in options:
        print("fake vllm: expected --load-format dummy", flush=True)
        return 1
    util = float(_arg(options, "--gpu-memory-utilization", "0.92") or 0.92)
    free_fraction = float(os.environ.get("FAKE_VLLM_FREE_FRACTION", "1.0"))
    if util > free_fraction:
        print(
            f"ValueError: Free memory on device cuda:0 ({free_fraction * TOTAL_GIB:.2f}/{TOTAL_GIB:.2f} GiB) on "
            f"startup is less than desired GPU memory utilization ({util}, {util * TOTAL_GIB:.2f} GiB). Decrease "
            "GPU memory utilization or reduce GPU memory used by other processes.",
            flush=True,
        )
        return 1
    visible = [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g]
    tp = int(_arg(options, "--tensor-parallel-size", "1") or 1)
    if visible and tp > len(visible):
        print(
            f"ValueError: World size ({tp}) is larger than the number of available GPUs ({len(visible)}) in this "
            "node.",
            flush=True,
        )
        return 1
    root = Path(os.environ["FAKE_GPU_STATE"])
    states = [root / f"{gpu}-{os.getpid()}" for gpu in visible] or [root / str(os.getpid())]
    for state in states:
        state.write_text(os.environ.get("FAKE_VLLM_MIB", "1000"))
    client = mps_connect()
    print(f"fake vllm: cpus {sorted(os.sched_getaffinity(0))}", flush=True)

    def stopped(*_: object) -> None:  # where a `pin` action left it
        print(f"fake vllm: cpus at stop {sorted(os.sched_getaffinity(0))}", flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stopped)
    print("\n".join(startup_lines(options)), flush=True)
    # what the harness's startup probe (probe_site/sitecustomize.py) installed in this process, if anything
    print(f"fake vllm: probe {'installed' if 'colo_startup_probe' in sys.modules else 'absent'}", flush=True)
    # socketserver's default backlog of 5 resets connections when a load phase opens 16 and more at once on a
    # busy machine; a real server's backlog is far larger
    ThreadingHTTPServer.request_queue_size = 128
    server = ThreadingHTTPServer(("127.0.0.1", int(_arg(options, "--port", "8000") or 8000)), Handler)
    try:
        server.serve_forever()
    finally:
        for state in states:
            state.unlink(missing_ok=True)
        if client is not None:
            client.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
