"""The init container's script: records the one GPU it was given, and refuses anything else."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.scripts.fakes import UUID_A, UUID_B, Sandbox

DISCOVER = "gpu-uuid-discover.sh"


def test_writes_the_uuid_of_its_gpu(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi([(0, UUID_A)])
    result = sandbox.run(DISCOVER, env={"COLO_GPU_UUID_FILE": str(uuid_file)})
    assert result.returncode == 0, result.stderr
    assert uuid_file.read_text() == UUID_A + "\n"
    assert not list(uuid_file.parent.glob("uuid.*")), "the temporary file must be renamed away"


def test_seeing_more_than_the_requested_gpu_fails(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi([(0, UUID_A), (1, UUID_B)])
    result = sandbox.run(DISCOVER, env={"COLO_GPU_UUID_FILE": str(uuid_file)})
    assert result.returncode != 0
    assert "expected exactly the one GPU" in result.stderr
    assert not uuid_file.exists()


def test_nvidia_smi_failing_fails_with_its_message(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake(
        "nvidia-smi",
        'echo "NVIDIA-SMI has failed because it could not communicate with the driver"\nexit 6\n',
    )
    result = sandbox.run(DISCOVER, env={"COLO_GPU_UUID_FILE": str(uuid_file)})
    assert result.returncode != 0
    assert "could not communicate with the driver" in result.stderr
    assert not uuid_file.exists()


@pytest.mark.skipif(shutil.which("nvidia-smi", path="/usr/bin:/bin") is not None, reason="system nvidia-smi")
def test_missing_nvidia_smi_fails(sandbox: Sandbox, uuid_file: Path) -> None:
    result = sandbox.run(DISCOVER, env={"COLO_GPU_UUID_FILE": str(uuid_file)})
    assert result.returncode != 0
    assert "nvidia-smi is not on PATH" in result.stderr


def test_a_malformed_uuid_from_nvidia_smi_fails(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi([(0, "GPU-47ecdc0c")])
    result = sandbox.run(DISCOVER, env={"COLO_GPU_UUID_FILE": str(uuid_file)})
    assert result.returncode != 0
    assert "not a full GPU UUID" in result.stderr


def test_restart_keeps_a_file_that_names_the_same_gpu(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi([(0, UUID_A)])
    uuid_file.parent.mkdir(parents=True)
    uuid_file.write_text(UUID_A + "\n")
    result = sandbox.run(DISCOVER, env={"COLO_GPU_UUID_FILE": str(uuid_file)})
    assert result.returncode == 0, result.stderr
    assert "already records" in result.stdout
    assert uuid_file.read_text() == UUID_A + "\n"


def test_restart_replaces_a_stale_or_broken_file(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi([(0, UUID_B)])
    uuid_file.parent.mkdir(parents=True)
    uuid_file.write_text("garbage")
    result = sandbox.run(DISCOVER, env={"COLO_GPU_UUID_FILE": str(uuid_file)})
    assert result.returncode == 0, result.stderr
    assert "replacing it" in result.stderr
    assert uuid_file.read_text() == UUID_B + "\n"
