"""The real-GPU handoff check, run here against a fake nvidia-smi and a fake PyTorch.

On GPUs the script compares the UUID the handoff discovered with the one PyTorch reports; these tests
prove it reports a match only when they agree, and fails when the exported index points elsewhere.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.scripts.fakes import UUID_A, UUID_B, Sandbox

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu" / "check_handoff.sh"
GPUS = [(0, UUID_A), (1, UUID_B)]

NVIDIA_SMI = """
gpus=({uuids})
only=""
if [[ $1 == -i ]]; then only=$2; shift 2; fi
case "$*" in
  -L) for i in "${{!gpus[@]}}"; do echo "GPU $i: H200 (UUID: ${{gpus[$i]}})"; done ;;
  *driver_version*) echo 580.0 ;;
  *index,gpu_uuid,pci.bus_id,name*) for i in "${{!gpus[@]}}"; do echo "$i, ${{gpus[$i]}}, 0000:0$i:00.0, H200"; done ;;
  *pci.bus_id,gpu_uuid*) for i in "${{!gpus[@]}}"; do
      if [[ -z $only || $only == "$i" ]]; then echo "0000:0$i:00.0, ${{gpus[$i]}}"; fi; done ;;
  *index,gpu_uuid*) for i in "${{!gpus[@]}}"; do echo "$i, ${{gpus[$i]}}"; done ;;
  *gpu_uuid*) if [[ -n $only ]]; then echo "${{gpus[$only]}}"; else printf '%s\\n' "${{gpus[@]}}"; fi ;;
  *) echo "unexpected: $*" >&2; exit 9 ;;
esac
"""

# PyTorch's view: a UUID selects that GPU; an index counts in PCI order only with CUDA_DEVICE_ORDER=PCI_BUS_ID,
# otherwise in the order given by {fastest} (a machine whose fastest-first order differs from PCI order).
PYTHON3 = """
pci=({uuids})
fastest=({fastest})
dev=${{CUDA_VISIBLE_DEVICES%%,*}}
if [[ $dev == GPU-* ]]; then echo "$dev"; exit 0; fi
if [[ ${{CUDA_DEVICE_ORDER:-}} == PCI_BUS_ID ]]; then echo "${{pci[$dev]}}"; else echo "${{fastest[$dev]}}"; fi
"""


def _run(
    sandbox: Sandbox, fastest: list[str] | None = None, python3: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the check with GPUS on a fake nvidia-smi, and a fake PyTorch (ordered `fastest`, or `python3`)."""
    uuids = " ".join(u for _, u in GPUS)
    sandbox.fake("nvidia-smi", NVIDIA_SMI.format(uuids=uuids))
    sandbox.fake("python3", python3 or PYTHON3.format(uuids=uuids, fastest=" ".join(fastest or [])))
    env = {"PATH": f"{sandbox.bin}:/usr/bin:/bin", "HOME": str(sandbox.root)}
    return subprocess.run(
        ["bash", str(SCRIPT), str(sandbox.root / "out")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_every_gpu_matches_when_cuda_counts_like_nvidia_smi(sandbox: Sandbox) -> None:
    result = _run(sandbox, fastest=[UUID_A, UUID_B])
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith(("0 ", "1 "))]
    assert [row[1] for row in rows] == [UUID_A, UUID_B]
    assert all(row[2:] == ["match", "match", "match"] for row in rows)


def test_an_index_without_pci_order_is_caught_when_cuda_orders_gpus_differently(sandbox: Sandbox) -> None:
    result = _run(sandbox, fastest=[UUID_B, UUID_A])
    # The handoff itself sets CUDA_DEVICE_ORDER=PCI_BUS_ID, so it still passes; the bare index would not.
    assert result.returncode == 0, result.stderr
    assert f"MISMATCH:{UUID_B}" in result.stdout and f"MISMATCH:{UUID_A}" in result.stdout


def test_a_wrong_gpu_fails_the_check(sandbox: Sandbox) -> None:
    result = _run(sandbox, python3=f'echo "{UUID_B}"\n')  # CUDA always lands on GPU 1
    assert result.returncode == 1
    assert f"MISMATCH:{UUID_B}" in result.stdout
