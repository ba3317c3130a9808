#!/usr/bin/env bash
# Runs in a plain init container that requests one GPU (nvidia.com/gpu: 1) and records that GPU's UUID
# for the containers of the pod that request none (uuid-handoff). Kubelet hands a finished init
# container's devices to the first app container that asks for the same resource, so the embedding
# server gets this very GPU, and the servers that read the file know which one it is.
#
# Environment: COLO_GPU_UUID_FILE (default /run/colo/gpu/uuid).
set -euo pipefail

uuid_file="${COLO_GPU_UUID_FILE:-/run/colo/gpu/uuid}"
uuid_pattern='^GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'

fail() {
  echo "gpu-uuid-discover: error: $*" >&2
  exit 1
}

command -v nvidia-smi >/dev/null 2>&1 ||
  fail "nvidia-smi is not on PATH: the NVIDIA container runtime did not inject the GPU this container requested"

if ! listing=$(nvidia-smi --query-gpu=gpu_uuid --format=csv,noheader 2>&1); then
  fail "nvidia-smi --query-gpu=gpu_uuid failed: ${listing}"
fi

uuids=()
while IFS= read -r line; do
  line="${line//[[:space:]]/}"
  [[ -n $line ]] && uuids+=("$line")
done <<<"$listing"

if ((${#uuids[@]} != 1)); then
  fail "expected exactly the one GPU this container requested, nvidia-smi lists ${#uuids[@]} (${uuids[*]:-none}); the runtime is not honouring the device plugin's allocation"
fi
uuid="${uuids[0]}"
[[ $uuid =~ $uuid_pattern ]] ||
  fail "nvidia-smi reported '${uuid}', which is not a full GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)"

# A restarted pod finds the file of its previous run: keep it only if it names this GPU.
if [[ -e $uuid_file ]]; then
  previous="$(head -n 1 "$uuid_file" 2>/dev/null || true)"
  previous="${previous//[[:space:]]/}"
  if [[ $previous == "$uuid" ]]; then
    echo "gpu-uuid-discover: ${uuid_file} already records ${uuid}"
    exit 0
  fi
  echo "gpu-uuid-discover: ${uuid_file} held '${previous}'; replacing it with this container's GPU ${uuid}" >&2
fi

mkdir -p "$(dirname "$uuid_file")" || fail "cannot create the directory of ${uuid_file}"
# Write then rename, so a reader never sees a half-written file.
tmp="$(mktemp "${uuid_file}.XXXXXX")" || fail "cannot create a temporary file next to ${uuid_file}"
printf '%s\n' "$uuid" >"$tmp"
mv -f "$tmp" "$uuid_file"
echo "gpu-uuid-discover: wrote ${uuid} to ${uuid_file}"
