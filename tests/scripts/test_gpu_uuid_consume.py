"""The server-side script: turns the recorded UUID into CUDA_VISIBLE_DEVICES, or stops with a reason."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from tests.scripts.fakes import UUID_A, UUID_B, UUID_C, Sandbox

CONSUME = "gpu-uuid-consume.sh"


def _env(uuid_file: Path, **extra: str) -> dict[str, str]:
    return {
        "COLO_GPU_UUID_FILE": str(uuid_file),
        "COLO_GPU_UUID_TIMEOUT_S": "1",
        "COLO_GPU_UUID_POLL_S": "0.1",
        **extra,
    }


def _record(uuid_file: Path, text: str) -> None:
    uuid_file.parent.mkdir(parents=True, exist_ok=True)
    uuid_file.write_text(text)


def _exported(stdout: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in stdout.splitlines() if line)


def test_single_gpu_node_exports_index_zero_in_pci_order(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi([(0, UUID_A)])
    _record(uuid_file, UUID_A + "\n")
    result = sandbox.run(CONSUME, "--print-env", env=_env(uuid_file))
    assert result.returncode == 0, result.stderr
    assert _exported(result.stdout) == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "0"}


def test_multi_gpu_node_picks_the_index_of_the_recorded_gpu(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi([(0, UUID_A), (1, UUID_B), (2, UUID_C)])
    _record(uuid_file, UUID_C + "\n")
    result = sandbox.run(CONSUME, "--print-env", env=_env(uuid_file))
    assert result.returncode == 0, result.stderr
    assert _exported(result.stdout)["CUDA_VISIBLE_DEVICES"] == "2"


def test_vllm_that_accepts_uuids_gets_the_uuid_itself(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi([(0, UUID_A), (1, UUID_B)])
    _record(uuid_file, UUID_B)
    result = sandbox.run(CONSUME, "--print-env", env=_env(uuid_file, COLO_VLLM_ACCEPTS_UUID="true"))
    assert result.returncode == 0, result.stderr
    assert _exported(result.stdout) == {"CUDA_VISIBLE_DEVICES": UUID_B}


def test_exec_mode_runs_the_command_with_the_variables(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi([(0, UUID_A), (1, UUID_B)])
    _record(uuid_file, UUID_B + "\n")
    result = sandbox.run(
        CONSUME,
        "--",
        "bash",
        "-c",
        'echo "$CUDA_VISIBLE_DEVICES $CUDA_DEVICE_ORDER $0 $1"',
        "--port",
        "8000",
        env=_env(uuid_file),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1 PCI_BUS_ID --port 8000"


def test_env_file_mode_writes_the_variables(sandbox: Sandbox, uuid_file: Path, tmp_path: Path) -> None:
    sandbox.fake_nvidia_smi([(0, UUID_A)])
    _record(uuid_file, UUID_A)
    env_file = tmp_path / "gpu.env"
    result = sandbox.run(CONSUME, "--env-file", str(env_file), env=_env(uuid_file))
    assert result.returncode == 0, result.stderr
    assert _exported(env_file.read_text())["CUDA_VISIBLE_DEVICES"] == "0"


def test_missing_file_times_out_with_a_clear_message(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi([(0, UUID_A)])
    started = time.monotonic()
    result = sandbox.run(CONSUME, "--print-env", env=_env(uuid_file))
    assert result.returncode != 0
    assert "timed out after 1s" in result.stderr
    assert time.monotonic() - started < 10


def test_file_that_appears_while_waiting_is_used(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi([(0, UUID_A)])
    writer = threading.Timer(0.3, _record, args=(uuid_file, UUID_A + "\n"))
    writer.start()
    result = sandbox.run(CONSUME, "--print-env", env=_env(uuid_file, COLO_GPU_UUID_TIMEOUT_S="10"))
    writer.join()
    assert result.returncode == 0, result.stderr
    assert _exported(result.stdout)["CUDA_VISIBLE_DEVICES"] == "0"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "is empty"),
        ("\n  \n", "is empty"),
        ("GPU-47ecdc0c\n", "not a full GPU UUID"),
        ("0\n", "not a full GPU UUID"),
        (f"{UUID_A}\n{UUID_B}\n", "holds 2 lines"),
    ],
)
def test_empty_or_malformed_file_fails(sandbox: Sandbox, uuid_file: Path, content: str, message: str) -> None:
    sandbox.fake_nvidia_smi([(0, UUID_A)])
    _record(uuid_file, content)
    result = sandbox.run(CONSUME, "--print-env", env=_env(uuid_file))
    assert result.returncode != 0
    assert message in result.stderr
    assert result.stdout == ""


def test_uuid_not_on_this_node_fails_and_lists_what_is(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi([(0, UUID_A), (1, UUID_B)])
    _record(uuid_file, UUID_C)
    result = sandbox.run(CONSUME, "--print-env", env=_env(uuid_file))
    assert result.returncode != 0
    assert f"GPU {UUID_C}" in result.stderr
    assert f"1:{UUID_B}" in result.stderr


def test_nvidia_smi_failing_fails(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake("nvidia-smi", "echo 'Failed to initialize NVML: Unknown Error' >&2\nexit 255\n")
    _record(uuid_file, UUID_A)
    result = sandbox.run(CONSUME, "--print-env", env=_env(uuid_file))
    assert result.returncode != 0
    assert "Failed to initialize NVML" in result.stderr


@pytest.mark.skipif(shutil.which("nvidia-smi", path="/usr/bin:/bin") is not None, reason="system nvidia-smi")
def test_missing_nvidia_smi_names_the_runtime_as_the_cause(sandbox: Sandbox, uuid_file: Path) -> None:
    _record(uuid_file, UUID_A)
    result = sandbox.run(CONSUME, "--print-env", env=_env(uuid_file))
    assert result.returncode != 0
    assert "ignores NVIDIA_VISIBLE_DEVICES=all" in result.stderr


def test_restart_revalidates_an_existing_file(sandbox: Sandbox, uuid_file: Path) -> None:
    """A restarted container finds the file at once; it is checked again, not trusted."""
    sandbox.fake_nvidia_smi([(0, UUID_A)])
    _record(uuid_file, UUID_A)
    first = sandbox.run(CONSUME, "--print-env", env=_env(uuid_file))
    assert first.returncode == 0, first.stderr
    _record(uuid_file, "GPU-not-a-uuid")
    second = sandbox.run(CONSUME, "--print-env", env=_env(uuid_file))
    assert second.returncode != 0
    assert "not a full GPU UUID" in second.stderr


def test_no_command_and_no_mode_is_a_usage_error(sandbox: Sandbox, uuid_file: Path) -> None:
    result = sandbox.run(CONSUME, env=_env(uuid_file))
    assert result.returncode != 0
    assert "usage" in result.stderr
