#!/usr/bin/env bash
# Check the GPU UUID handoff on real GPUs: the index (or UUID) the consumer exports must be the GPU that
# CUDA then uses, for every GPU of the machine.
#
# For each GPU i the discovery script runs with an nvidia-smi that shows only GPU i (as in a container
# that was given that one device); the consumer script runs with the plain nvidia-smi, which shows every
# GPU (as in a container with NVIDIA_VISIBLE_DEVICES=all). A PyTorch process started with the variables
# the consumer exports then reports which GPU it got. Three ways of pointing CUDA at the GPU are tried:
# the full UUID, the index with CUDA_DEVICE_ORDER=PCI_BUS_ID, and the index without CUDA_DEVICE_ORDER.
#
# Usage: bench/gpu/check_handoff.sh [OUT_DIR]      (exit 1 on any mismatch of the first two ways)
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
scripts="$here/colo/scripts"
out=${1:-$(mktemp -d)}
mkdir -p "$out"
real_smi=$(command -v nvidia-smi) || { echo "nvidia-smi not found" >&2; exit 1; }
count=$("$real_smi" -L | wc -l)
echo "GPUs: $count; driver $("$real_smi" --query-gpu=driver_version --format=csv,noheader | head -n 1)"
"$real_smi" --query-gpu=index,gpu_uuid,pci.bus_id,name --format=csv,noheader

torch_uuid() {  # the UUID of the GPU CUDA calls device 0 under the given environment
  env "$@" python3 -c 'import torch; print("GPU-" + str(torch.cuda.get_device_properties(0).uuid))'
}

status=0
printf '%-5s %-42s %-10s %-10s %-10s\n' gpu discovered uuid-mode pci-index plain-index | tee "$out/summary.txt"
for ((i = 0; i < count; i++)); do
  work="$out/gpu$i"
  mkdir -p "$work/bin"
  # An nvidia-smi that sees only GPU i, like the one inside a container given that device.
  printf '#!/usr/bin/env bash\nexec %q -i %d "$@"\n' "$real_smi" "$i" >"$work/bin/nvidia-smi"
  chmod +x "$work/bin/nvidia-smi"
  PATH="$work/bin:$PATH" COLO_GPU_UUID_FILE="$work/uuid" bash "$scripts/gpu-uuid-discover.sh" >"$work/discover.log" 2>&1
  discovered=$(cat "$work/uuid")

  COLO_GPU_UUID_FILE="$work/uuid" COLO_VLLM_ACCEPTS_UUID=true \
    bash "$scripts/gpu-uuid-consume.sh" --env-file "$work/env-uuid" 2>>"$work/consume.log"
  COLO_GPU_UUID_FILE="$work/uuid" COLO_VLLM_ACCEPTS_UUID=false \
    bash "$scripts/gpu-uuid-consume.sh" --env-file "$work/env-index" 2>>"$work/consume.log"
  mapfile -t uuid_env <"$work/env-uuid"
  mapfile -t index_env <"$work/env-index"
  plain_env=()
  for assignment in "${index_env[@]}"; do
    [[ $assignment == CUDA_DEVICE_ORDER=* ]] || plain_env+=("$assignment")
  done

  results=()
  for variant in uuid_env index_env plain_env; do
    declare -n assignments=$variant
    got=$(torch_uuid -u CUDA_DEVICE_ORDER "${assignments[@]}" 2>>"$work/torch.log" || echo error)
    if [[ $got == "$discovered" ]]; then results+=(match); else results+=("MISMATCH:$got"); fi
    unset -n assignments
  done
  printf '%-5s %-42s %-10s %-10s %-10s\n' "$i" "$discovered" "${results[@]}" | tee -a "$out/summary.txt"
  [[ ${results[0]} == match && ${results[1]} == match ]] || status=1
  cat "$work/consume.log" >>"$out/consume.log"
done
exit "$status"
