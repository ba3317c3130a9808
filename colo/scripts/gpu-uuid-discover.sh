#!/usr/bin/env bash
# Runs in a plain init container that was given the pair's GPUs and records their UUIDs for the servers of the
# pod, one per line: line k is GPU k of the pair (rank k of a tensor-parallel LLM, and the GPU a companion placed
# there maps). The lines follow PCI bus order, the order nvidia-smi numbers GPUs in and CUDA enumerates them in
# with CUDA_DEVICE_ORDER=PCI_BUS_ID, so the LLM's CUDA_VISIBLE_DEVICES lists them as vLLM numbers its ranks.
#
# uuid-handoff: the container requests the pair's GPUs (nvidia.com/gpu: N); kubelet hands a finished init
# container's devices to the next container that asks for the same resource, so the server that requests them
# gets these very GPUs, and the servers that read the file know which they are.
# dra with a tensor-parallel LLM: one such container per device request of the pod's claim, each given one GPU
# and run in order, records its GPU as line COLO_GPU_SLOT, keeping the lines the ones before it wrote.
#
# Environment:
#   COLO_GPU_UUID_FILE  where the UUIDs go (default /run/colo/gpu/uuid)
#   COLO_GPU_COUNT      how many GPUs this container was given (default 1)
#   COLO_GPU_SLOT       record this container's one GPU as line SLOT (0-based) of the file; unset: the whole file
set -euo pipefail

uuid_file="${COLO_GPU_UUID_FILE:-/run/colo/gpu/uuid}"
count="${COLO_GPU_COUNT:-1}"
slot="${COLO_GPU_SLOT:-}"
uuid_pattern='^GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'

fail() {
  echo "gpu-uuid-discover: error: $*" >&2
  exit 1
}

[[ $count =~ ^[1-9][0-9]*$ ]] || fail "COLO_GPU_COUNT must be a whole number of GPUs, got '${count}'"
if [[ -n $slot ]]; then
  [[ $slot =~ ^[0-9]+$ ]] || fail "COLO_GPU_SLOT must be a line number from 0, got '${slot}'"
  ((count == 1)) || fail "COLO_GPU_SLOT records one GPU; COLO_GPU_COUNT is ${count}"
fi

command -v nvidia-smi >/dev/null 2>&1 ||
  fail "nvidia-smi is not on PATH: the NVIDIA container runtime did not inject the GPU this container requested"

if ! listing=$(nvidia-smi --query-gpu=pci.bus_id,gpu_uuid --format=csv,noheader 2>&1); then
  fail "nvidia-smi --query-gpu=pci.bus_id,gpu_uuid failed: ${listing}"
fi

# "00000000:18:00.0, GPU-..." lines; the bus ids have a fixed width, so sorting them as text is PCI bus order
# whatever order nvidia-smi printed them in.
rows=()
while IFS=, read -r bus gpu_uuid; do
  bus="${bus//[[:space:]]/}"
  gpu_uuid="${gpu_uuid//[[:space:]]/}"
  [[ -z $bus && -z $gpu_uuid ]] && continue
  rows+=("${bus^^} ${gpu_uuid}")
done <<<"$listing"
uuids=()
if ((${#rows[@]} > 0)); then
  while read -r _ gpu_uuid; do
    uuids+=("$gpu_uuid")
  done < <(printf '%s\n' "${rows[@]}" | LC_ALL=C sort)
fi

if ((${#uuids[@]} != count)); then
  if ((count == 1)); then
    fail "expected exactly the one GPU this container requested, nvidia-smi lists ${#uuids[@]} (${uuids[*]:-none}); the runtime is not honouring the device plugin's allocation"
  fi
  fail "expected exactly the ${count} GPUs this container requested, nvidia-smi lists ${#uuids[@]} (${uuids[*]:-none}); the runtime is not honouring the allocation"
fi
for uuid in "${uuids[@]}"; do
  [[ $uuid =~ $uuid_pattern ]] ||
    fail "nvidia-smi reported '${uuid}', which is not a full GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)"
done

previous=()
if [[ -e $uuid_file ]]; then
  while IFS= read -r line || [[ -n $line ]]; do
    line="${line//[[:space:]]/}"
    [[ -n $line ]] && previous+=("$line")
  done <"$uuid_file"
fi

if [[ -n $slot ]]; then
  # The containers before this one wrote lines 0 .. slot-1; what a previous run left after them is rewritten
  # by the containers that follow.
  ((${#previous[@]} >= slot)) ||
    fail "${uuid_file} holds ${#previous[@]} lines, so line ${slot} cannot be written: the containers that record GPUs 0 to $((slot - 1)) did not run first"
  wanted=("${previous[@]:0:slot}" "${uuids[0]}")
else
  wanted=("${uuids[@]}")
fi

# A restarted pod finds the file of its previous run: keep it only if it names these GPUs.
if ((${#previous[@]} > 0)); then
  if [[ "${previous[*]}" == "${wanted[*]}" ]]; then
    echo "gpu-uuid-discover: ${uuid_file} already records ${wanted[*]}"
    exit 0
  fi
  echo "gpu-uuid-discover: ${uuid_file} held '${previous[*]}'; replacing it with ${wanted[*]}" >&2
fi

mkdir -p "$(dirname "$uuid_file")" || fail "cannot create the directory of ${uuid_file}"
# Write then rename, so a reader never sees a half-written file.
tmp="$(mktemp "${uuid_file}.XXXXXX")" || fail "cannot create a temporary file next to ${uuid_file}"
printf '%s\n' "${wanted[@]}" >"$tmp"
mv -f "$tmp" "$uuid_file"
echo "gpu-uuid-discover: wrote ${wanted[*]} to ${uuid_file}"
