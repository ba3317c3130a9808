#!/usr/bin/env bash
# Runs at the top of a server container: reads the UUIDs the init container recorded (line k: GPU k of the
# pair), checks that this container sees those GPUs, and points CUDA at the ones it runs on. uuid-handoff: every
# server, the one that holds the pair's GPUs and those that request none; dra: a tensor-parallel LLM, whose
# claim gives it every GPU of the group.
#
#   gpu-uuid-consume.sh -- COMMAND [ARGS...]   export the variables, then exec COMMAND
#   gpu-uuid-consume.sh --print-env            print KEY=VALUE lines instead (nothing is exec'd)
#   gpu-uuid-consume.sh --env-file PATH        write KEY=VALUE lines to PATH instead
#
# Environment:
#   COLO_GPU_UUID_FILE       where the UUID is (default /run/colo/gpu/uuid)
#   COLO_GPU_UUID_TIMEOUT_S  how long to wait for the file to appear (default 60)
#   COLO_GPU_UUID_POLL_S     how often to look (default 1)
#   COLO_GPU_COUNT           how many lines the file holds: the pair's GPUs (default 1)
#   COLO_GPU_SLOTS           the lines this server maps, in order: all (a tensor-parallel LLM, rank k on line k)
#                            or comma-separated line numbers (default 0)
#   COLO_VLLM_ACCEPTS_UUID   true: export the UUIDs themselves (vLLM >= 0.24); otherwise the nvidia-smi indices,
#                            with CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA numbers GPUs as nvidia-smi does
set -euo pipefail

uuid_file="${COLO_GPU_UUID_FILE:-/run/colo/gpu/uuid}"
timeout_s="${COLO_GPU_UUID_TIMEOUT_S:-60}"
poll_s="${COLO_GPU_UUID_POLL_S:-1}"
accepts_uuid="${COLO_VLLM_ACCEPTS_UUID:-false}"
count="${COLO_GPU_COUNT:-1}"
slots="${COLO_GPU_SLOTS:-0}"
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
[[ $count =~ ^[1-9][0-9]*$ ]] || fail "COLO_GPU_COUNT must be a whole number of GPUs, got '${count}'"
[[ $slots == all || $slots =~ ^[0-9]+(,[0-9]+)*$ ]] ||
  fail "COLO_GPU_SLOTS must be all or line numbers such as 0,1; got '${slots}'"

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
if ((${#lines[@]} != count)); then
  ((count == 1)) && fail "${uuid_file} holds ${#lines[@]} lines; expected one GPU UUID"
  fail "${uuid_file} holds ${#lines[@]} lines; expected ${count} GPU UUIDs, one per GPU of the pair"
fi
declare -A recorded=()
for uuid in "${lines[@]}"; do
  [[ $uuid =~ $uuid_pattern ]] ||
    fail "${uuid_file} holds '${uuid}', which is not a full GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)"
  [[ -z ${recorded[$uuid]:-} ]] || fail "${uuid_file} names ${uuid} twice; every GPU of the pair is a different one"
  recorded[$uuid]=1
done

if [[ $slots == all ]]; then
  wanted=("${lines[@]}")
else
  wanted=()
  IFS=, read -r -a picked <<<"$slots"
  for line_number in "${picked[@]}"; do
    ((10#$line_number < count)) ||
      fail "COLO_GPU_SLOTS names line ${line_number}, but ${uuid_file} holds ${count} (lines 0 to $((count - 1)))"
    wanted+=("${lines[10#$line_number]}")
  done
fi

command -v nvidia-smi >/dev/null 2>&1 ||
  fail "nvidia-smi is not on PATH: this node's runtime ignores NVIDIA_VISIBLE_DEVICES=all for containers that request no GPU (Bottlerocket, CDI); use gpuPairing dra or time-slice"
if ! listing=$(nvidia-smi --query-gpu=index,gpu_uuid --format=csv,noheader 2>&1); then
  fail "nvidia-smi --query-gpu=index,gpu_uuid failed: ${listing}"
fi

declare -A index_of=()
seen=()
while IFS=, read -r idx gpu_uuid; do
  idx="${idx//[[:space:]]/}"
  gpu_uuid="${gpu_uuid//[[:space:]]/}"
  [[ -z $idx && -z $gpu_uuid ]] && continue
  seen+=("${idx}:${gpu_uuid}")
  [[ $idx =~ ^[0-9]+$ ]] || fail "nvidia-smi gave '${idx}' as the index of ${gpu_uuid}"
  index_of[$gpu_uuid]="$idx"
done <<<"$listing"

indices=()
for uuid in "${wanted[@]}"; do
  [[ -n ${index_of[$uuid]:-} ]] ||
    fail "GPU ${uuid} from ${uuid_file} is not among the GPUs this container sees (${seen[*]:-none})"
  indices+=("${index_of[$uuid]}")
done

joined() {
  local IFS=,
  echo "$*"
}
if [[ $accepts_uuid == true ]]; then
  exports=("CUDA_VISIBLE_DEVICES=$(joined "${wanted[@]}")")
else
  exports=("CUDA_DEVICE_ORDER=PCI_BUS_ID" "CUDA_VISIBLE_DEVICES=$(joined "${indices[@]}")")
fi
echo "gpu-uuid-consume: GPUs ${wanted[*]} are indices ${indices[*]} here; ${exports[*]}" >&2

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
