"""A sandbox to run colo's pod scripts in real bash, with fake `nvidia-smi` / `curl` first on PATH."""

from __future__ import annotations

import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "colo" / "scripts"
UUID_A = "GPU-47ecdc0c-1f2e-4a5b-8c9d-0123456789ab"
UUID_B = "GPU-9b1d2e3f-aaaa-4bbb-8ccc-fedcba987654"
UUID_C = "GPU-00000000-1111-4222-8333-444444444444"
UUID_D = "GPU-d0d0d0d0-2222-4333-8444-555555555555"


def bus_id(index: int) -> str:
    """nvidia-smi's pci.bus_id for the GPU at `index` of an 8-GPU board: domain, bus, device, function."""
    return f"00000000:{0x18 + 0x10 * index:02X}:00.0"


@dataclass
class Sandbox:
    root: Path
    bin: Path

    def fake(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text("#!/usr/bin/env bash\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)

    def fake_nvidia_smi(self, gpus: list[tuple[int, str]], bus_ids: list[str] | None = None) -> None:
        """nvidia-smi answering every query the scripts make, for the GPUs (index, uuid) given, listed in the
        order given; their PCI bus ids follow their indices unless `bus_ids` says otherwise."""
        buses = bus_ids or [bus_id(index) for index, _ in gpus]
        uuid_lines = "\n".join(uuid for _, uuid in gpus)
        index_lines = "\n".join(f"{index}, {uuid}" for index, uuid in gpus)
        bus_lines = "\n".join(f"{bus}, {uuid}" for bus, (_, uuid) in zip(buses, gpus, strict=True))
        self.fake(
            "nvidia-smi",
            f"""case "$*" in
  *pci.bus_id,gpu_uuid*) printf '%s\\n' "{bus_lines}" ;;
  *index,gpu_uuid*) printf '%s\\n' "{index_lines}" ;;
  *gpu_uuid*) printf '%s\\n' "{uuid_lines}" ;;
  *) echo "unexpected query $*" >&2; exit 9 ;;
esac
""",
        )

    def run(
        self, script: str, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        # Only the sandbox's bin and the system's basics: no real nvidia-smi or curl can leak in.
        full_env = {"PATH": f"{self.bin}:/usr/bin:/bin", "HOME": str(self.root), **(env or {})}
        return subprocess.run(
            ["bash", str(SCRIPTS / script), *args],
            env=full_env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
