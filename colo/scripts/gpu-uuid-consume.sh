#!/usr/bin/env bash
# Runs at the top of a server container that requests no GPU (uuid-handoff): reads the UUID the init
# container recorded, checks that this node really has that GPU, and points CUDA at it.
#
#   gpu-uuid-consume.sh -- COMMAND [ARGS...]   export the variables, then exec COMMAND
#   gpu-uuid-consume.sh --print-env            print KEY=VALUE lines instead (nothing is exec'd)
#   gpu-uuid-consume.sh --env-file PATH        write KEY=VALUE lines to PATH instead
#
# Environment:
#   COLO_GPU_UUID_FILE       where the UUID is (default /run/colo/gpu/uuid)
#   COLO_GPU_UUID_TIMEOUT_S  how long to wait for the file to appear (default 60)
#   COLO_GPU_UUID_POLL_S     how often to look (default 1)
#   COLO_VLLM_ACCEPTS_UUID   true: export the UUID itself (vLLM >= 0.24); otherwise the nvidia-smi index,
#                            with CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA numbers GPUs as nvidia-smi does
set -euo pipefail

uuid_file="${COLO_GPU_UUID_FILE:-/run/colo/gpu/uuid}"
timeout_s="${COLO_GPU_UUID_TIMEOUT_S:-60}"
poll_s="${COLO_GPU_UUID_POLL_S:-1}"
accepts_uuid="${COLO_VLLM_ACCEPTS_UUID:-false}"
uuid_pattern='^GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'

fail() {
  echo "gpu-uuid-consume: error: $*" >&2
  exit 1
}

mode=""
env_file=""
case "${1:-}" in
  --print-env) mode=print ;;
  --env-file)
    [[ $# -ge 2 && -n $2 ]] || fail "--env-file needs a path"
    mode=file
    env_file="$2"
    ;;
  --)
    shift
    [[ $# -gt 0 ]] || fail "no command after --"
    mode=exec
    ;;
  *) fail "usage: gpu-uuid-consume.sh --print-env | --env-file PATH | -- COMMAND [ARGS...]" ;;
esac

[[ $timeout_s =~ ^[0-9]+$ ]] || fail "COLO_GPU_UUID_TIMEOUT_S must be whole seconds, got '${timeout_s}'"

# The file is written by rename, so once it exists it is complete; only its absence is worth waiting for.
waited_from=$SECONDS
while [[ ! -e $uuid_file ]]; do
  if ((SECONDS - waited_from >= timeout_s)); then
    fail "timed out after ${timeout_s}s waiting for ${uuid_file}: the gpu-uuid init container did not record a GPU"
  fi
  sleep "$poll_s"
done

lines=()
while IFS= read -r line || [[ -n $line ]]; do
  line="${line//[[:space:]]/}"
  [[ -n $line ]] && lines+=("$line")
done <"$uuid_file"
((${#lines[@]} > 0)) || fail "${uuid_file} is empty"
((${#lines[@]} == 1)) || fail "${uuid_file} holds ${#lines[@]} lines; expected one GPU UUID"
uuid="${lines[0]}"
[[ $uuid =~ $uuid_pattern ]] ||
  fail "${uuid_file} holds '${uuid}', which is not a full GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)"

command -v nvidia-smi >/dev/null 2>&1 ||
  fail "nvidia-smi is not on PATH: this node's runtime ignores NVIDIA_VISIBLE_DEVICES=all for containers that request no GPU (Bottlerocket, CDI); use gpuPairing dra or time-slice"
if ! listing=$(nvidia-smi --query-gpu=index,gpu_uuid --format=csv,noheader 2>&1); then
  fail "nvidia-smi --query-gpu=index,gpu_uuid failed: ${listing}"
fi

index=""
seen=()
while IFS=, read -r idx gpu_uuid; do
  idx="${idx//[[:space:]]/}"
  gpu_uuid="${gpu_uuid//[[:space:]]/}"
  [[ -z $idx && -z $gpu_uuid ]] && continue
  seen+=("${idx}:${gpu_uuid}")
  if [[ $gpu_uuid == "$uuid" ]]; then
    [[ $idx =~ ^[0-9]+$ ]] || fail "nvidia-smi gave '${idx}' as the index of ${uuid}"
    index="$idx"
  fi
done <<<"$listing"
[[ -n $index ]] || fail "GPU ${uuid} from ${uuid_file} is not among this node's GPUs (${seen[*]:-none})"

if [[ $accepts_uuid == true ]]; then
  exports=("CUDA_VISIBLE_DEVICES=${uuid}")
else
  exports=("CUDA_DEVICE_ORDER=PCI_BUS_ID" "CUDA_VISIBLE_DEVICES=${index}")
fi
echo "gpu-uuid-consume: GPU ${uuid} is index ${index} on this node; ${exports[*]}" >&2

case "$mode" in
  print) printf '%s\n' "${exports[@]}" ;;
  file) printf '%s\n' "${exports[@]}" >"$env_file" ;;
  exec)
    for assignment in "${exports[@]}"; do
      export "${assignment?}"
    done
    exec "$@"
    ;;
esac
