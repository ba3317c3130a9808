#!/usr/bin/env bash
# One call on the GPU machine: keep this call's parts of the wheel set, unpack the archives that are complete,
# and run a spec with the harness. Everything it writes for the caller goes to $OUT (at most 8 files there).
#
#   CARRY=.devcarry [ARCHIVES="core moe"] [SPEC=dense.json] [BUDGET_S=570] [MEASURE_MPS=1] bench/gpu/device_call.sh
#
# MEASURE_MPS=1 first runs bench/gpu/measure_mps.py (PyTorch alone, no wheel set) from the repository root, its
# result in $OUT/mps-figures.json; SIGINT at its time limit still lets it stop its workers and MPS daemon.
#
# CARRY holds common/ (manifest.json, src/harness as bench/gpu/harness, specs/) and p1/, p2/, ...: the parts,
# one folder per call, so each call carries only its own. Parts persist in /tmp/colo-parts and the unpacked
# set in /tmp/colo-site while the machine stays warm.
set -uo pipefail
start=$(date +%s)
carry=${CARRY:-.devcarry}
budget=${BUDGET_S:-570}
parts=/tmp/colo-parts
site=/tmp/colo-site
out=${OUT:-/tmp/colo-out}
mkdir -p "$parts" "$site" "$out"
exec > >(tee -a "$out/console.txt") 2>&1

echo "== call at $(date -u +%FT%TZ) on $(hostname)"
for dir in "$carry"/p*/; do [[ -d $dir ]] && cp "$dir"* "$parts"/; done
ls -l "$parts"
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,memory.free --format=csv
python3 --version
df -h /tmp | tail -1

common=$carry/common
export PYTHONPATH="$site:$common/src"
for archive in ${ARCHIVES:-}; do
  if [[ -f $site/.unpacked-$archive ]]; then echo "$archive: unpacked earlier"; continue; fi
  if python3 -m harness.unpack "$common/manifest.json" "$parts" "$site" "$archive"; then
    touch "$site/.unpacked-$archive"
  else
    echo "$archive: not unpacked"; exit 3
  fi
done

if [[ -n ${MEASURE_MPS:-} ]]; then
  echo "== measure_mps"
  timeout -s INT "${MEASURE_MPS_S:-240}" python3 bench/gpu/measure_mps.py --out "$out/mps-figures.json" \
    --workdir /tmp/colo-mps-measure || echo "measure_mps exited $?"
fi

if [[ -n ${SPEC:-} ]]; then
  run_out=/tmp/colo-run-${SPEC%.json}
  rm -rf "$run_out"
  left=$(( budget - ($(date +%s) - start) ))
  echo "== run $SPEC with $left s left"
  python3 -m harness.run_pairs "$common/specs/$SPEC" "$run_out" --workdir /tmp/colo-work --deadline-s "$left"
  cp "$run_out/results.json" "$out/${SPEC%.json}-results.json"
  cp "$run_out/logs.tar.gz" "$out/${SPEC%.json}-logs.tar.gz"
fi
echo "== call took $(( $(date +%s) - start )) s"
