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


@dataclass
class Sandbox:
    root: Path
    bin: Path

    def fake(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text("#!/usr/bin/env bash\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)

    def fake_nvidia_smi(self, gpus: list[tuple[int, str]]) -> None:
        """nvidia-smi answering both queries the scripts make, for the GPUs (index, uuid) given."""
        uuid_lines = "\n".join(uuid for _, uuid in gpus)
        index_lines = "\n".join(f"{index}, {uuid}" for index, uuid in gpus)
        self.fake(
            "nvidia-smi",
            f"""case "$*" in
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
