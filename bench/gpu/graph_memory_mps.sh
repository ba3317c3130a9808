#!/usr/bin/env bash
# Does CUDA MPS change what graph capture costs? measure_graph_memory.py (PyTorch alone) three times on one GPU:
# plain, then as a client of a private MPS daemon uncapped, then at 10 % of the threads. Every H100 MPS run of
# Qwen3-14B captured less graph memory than planned, and no plain run on that GPU says whether MPS is the cause.
#
#   [OUT=dir] [GRAPH_BUDGET_S=60] bash bench/gpu/graph_memory_mps.sh     # from the repository root
#
# Writes graph-plain.json, graph-mps.json and graph-mps10.json to $OUT; the daemon is always stopped.
set -uo pipefail
out=${OUT:-/tmp/colo-out}
budget=${GRAPH_BUDGET_S:-60}
mkdir -p "$out"
measure() { timeout -s INT $((budget + 30)) python3 bench/gpu/measure_graph_memory.py --out "$out/$1" --budget-s "$budget" \
    || echo "$1: exited $?"; }

echo "== graph memory, plain"
measure graph-plain.json

pipe=$(mktemp -d) logs=$(mktemp -d)
export CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$logs
stop_daemon() { echo quit | nvidia-cuda-mps-control >/dev/null 2>&1; }
trap stop_daemon EXIT
nvidia-cuda-mps-control -d || { echo "no MPS daemon"; exit 3; }
echo "== graph memory, MPS client, uncapped"
measure graph-mps.json
echo "== graph memory, MPS client, 10 % of the threads"
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=10 measure graph-mps10.json
stop_daemon
trap - EXIT
tail -n 5 "$logs/control.log" 2>/dev/null
