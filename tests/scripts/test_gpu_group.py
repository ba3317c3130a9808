"""The GPUs of a tensor-parallel pair: recorded once in PCI bus order (line k is GPU k of the pair), mapped whole
by the LLM, whose rank k CUDA puts on line k, and one line each by the companions placed on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts.fakes import UUID_A, UUID_B, UUID_C, UUID_D, Sandbox, bus_id

DISCOVER = "gpu-uuid-discover.sh"
CONSUME = "gpu-uuid-consume.sh"
NODE = [(0, UUID_A), (1, UUID_B), (2, UUID_C), (3, UUID_D)]


def _exported(stdout: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in stdout.splitlines() if line)


def _consume(sandbox: Sandbox, uuid_file: Path, slots: str, count: int = 4, **env: str) -> dict[str, str]:
    result = sandbox.run(
        CONSUME,
        "--print-env",
        env={
            "COLO_GPU_UUID_FILE": str(uuid_file),
            "COLO_GPU_UUID_TIMEOUT_S": "1",
            "COLO_GPU_COUNT": str(count),
            "COLO_GPU_SLOTS": slots,
            **env,
        },
    )
    assert result.returncode == 0, result.stderr
    return _exported(result.stdout)


def _record(uuid_file: Path, *uuids: str) -> None:
    uuid_file.parent.mkdir(parents=True, exist_ok=True)
    uuid_file.write_text("".join(f"{u}\n" for u in uuids))


def test_the_group_is_recorded_in_pci_bus_order_whatever_order_nvidia_smi_prints(
    sandbox: Sandbox, uuid_file: Path
) -> None:
    shuffled = [(2, UUID_C), (0, UUID_A), (3, UUID_D), (1, UUID_B)]
    sandbox.fake_nvidia_smi(shuffled, [bus_id(i) for i, _ in shuffled])
    result = sandbox.run(DISCOVER, env={"COLO_GPU_UUID_FILE": str(uuid_file), "COLO_GPU_COUNT": "4"})
    assert result.returncode == 0, result.stderr
    assert uuid_file.read_text().split() == [UUID_A, UUID_B, UUID_C, UUID_D]


def test_bus_ids_in_lower_case_sort_as_pci_order_too(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi([(0, UUID_B), (1, UUID_A)], ["00000000:9a:00.0", "00000000:1b:00.0"])
    result = sandbox.run(DISCOVER, env={"COLO_GPU_UUID_FILE": str(uuid_file), "COLO_GPU_COUNT": "2"})
    assert result.returncode == 0, result.stderr
    assert uuid_file.read_text().split() == [UUID_A, UUID_B]


def test_a_group_container_given_fewer_gpus_than_the_group_fails(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi(NODE[:2])
    result = sandbox.run(DISCOVER, env={"COLO_GPU_UUID_FILE": str(uuid_file), "COLO_GPU_COUNT": "4"})
    assert result.returncode != 0
    assert "expected exactly the 4 GPUs this container requested, nvidia-smi lists 2" in result.stderr
    assert not uuid_file.exists()


def test_one_container_per_claim_request_records_its_gpu_as_its_line(
    sandbox: Sandbox, uuid_file: Path
) -> None:
    """dra: each init container sees the one GPU of its request and runs after the ones before it."""
    env = {"COLO_GPU_UUID_FILE": str(uuid_file)}
    for slot, uuid in enumerate([UUID_C, UUID_A, UUID_D]):  # the scheduler's choice, in request order
        sandbox.fake_nvidia_smi([(0, uuid)])
        result = sandbox.run(DISCOVER, env={**env, "COLO_GPU_SLOT": str(slot)})
        assert result.returncode == 0, result.stderr
    assert uuid_file.read_text().split() == [UUID_C, UUID_A, UUID_D]
    # the pod restarts: the first container finds the whole file, keeps its own line, the next ones rewrite theirs
    sandbox.fake_nvidia_smi([(0, UUID_C)])
    again = sandbox.run(DISCOVER, env={**env, "COLO_GPU_SLOT": "0"})
    assert again.returncode == 0, again.stderr
    assert uuid_file.read_text().split() == [UUID_C]


def test_a_line_whose_predecessors_were_not_written_is_refused(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi([(0, UUID_B)])
    result = sandbox.run(DISCOVER, env={"COLO_GPU_UUID_FILE": str(uuid_file), "COLO_GPU_SLOT": "1"})
    assert result.returncode != 0
    assert "the containers that record GPUs 0 to 0 did not run first" in result.stderr


def test_a_slot_is_one_gpu(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi(NODE[:2])
    env = {"COLO_GPU_UUID_FILE": str(uuid_file), "COLO_GPU_SLOT": "0", "COLO_GPU_COUNT": "2"}
    result = sandbox.run(DISCOVER, env=env)
    assert result.returncode != 0 and "records one GPU" in result.stderr


@pytest.mark.parametrize(("accepts_uuid", "device_order"), [("true", None), ("false", "PCI_BUS_ID")])
def test_the_llm_maps_every_line_in_order_and_each_companion_the_line_it_was_placed_on(
    sandbox: Sandbox, uuid_file: Path, accepts_uuid: str, device_order: str | None
) -> None:
    """Rank k of the LLM is CUDA device k, the k-th entry of its CUDA_VISIBLE_DEVICES: line k of the file, the GPU
    the companion on GPU k maps. Shown on a node whose nvidia-smi numbers the pair's GPUs 3, 1, 0, 2."""
    sandbox.fake_nvidia_smi([(3, UUID_A), (1, UUID_B), (0, UUID_C), (2, UUID_D)])
    _record(uuid_file, UUID_A, UUID_B, UUID_C, UUID_D)
    llm = _consume(sandbox, uuid_file, "all", COLO_VLLM_ACCEPTS_UUID=accepts_uuid)
    ranks = llm["CUDA_VISIBLE_DEVICES"].split(",")
    assert llm.get("CUDA_DEVICE_ORDER") == device_order
    assert ranks == ([UUID_A, UUID_B, UUID_C, UUID_D] if accepts_uuid == "true" else ["3", "1", "0", "2"])
    for gpu in range(4):
        companion = _consume(sandbox, uuid_file, str(gpu), COLO_VLLM_ACCEPTS_UUID=accepts_uuid)
        assert companion["CUDA_VISIBLE_DEVICES"] == ranks[gpu]


def test_a_line_outside_the_group_is_refused(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi(NODE)
    _record(uuid_file, UUID_A, UUID_B)
    result = sandbox.run(
        CONSUME,
        "--print-env",
        env={"COLO_GPU_UUID_FILE": str(uuid_file), "COLO_GPU_COUNT": "2", "COLO_GPU_SLOTS": "2"},
    )
    assert result.returncode != 0
    assert "names line 2, but" in result.stderr and "holds 2 (lines 0 to 1)" in result.stderr


@pytest.mark.parametrize(
    ("recorded", "message"),
    [
        ((UUID_A, UUID_B, UUID_C), "holds 3 lines; expected 4 GPU UUIDs"),
        ((UUID_A, UUID_B, UUID_A, UUID_C), f"names {UUID_A} twice"),
    ],
)
def test_a_file_that_is_not_the_group_is_refused(
    sandbox: Sandbox, uuid_file: Path, recorded: tuple[str, ...], message: str
) -> None:
    sandbox.fake_nvidia_smi(NODE)
    _record(uuid_file, *recorded)
    result = sandbox.run(
        CONSUME,
        "--print-env",
        env={"COLO_GPU_UUID_FILE": str(uuid_file), "COLO_GPU_COUNT": "4", "COLO_GPU_SLOTS": "all"},
    )
    assert result.returncode != 0
    assert message in result.stderr
    assert result.stdout == ""


def test_the_llm_refuses_to_start_without_every_gpu_of_the_group(sandbox: Sandbox, uuid_file: Path) -> None:
    sandbox.fake_nvidia_smi(NODE[:3])  # the runtime gave this container three of the four
    _record(uuid_file, UUID_A, UUID_B, UUID_C, UUID_D)
    result = sandbox.run(
        CONSUME,
        "--print-env",
        env={"COLO_GPU_UUID_FILE": str(uuid_file), "COLO_GPU_COUNT": "4", "COLO_GPU_SLOTS": "all"},
    )
    assert result.returncode != 0
    assert (
        f"GPU {UUID_D} from" in result.stderr and "is not among the GPUs this container sees" in result.stderr
    )


@pytest.mark.parametrize(("name", "value"), [("COLO_GPU_COUNT", "0"), ("COLO_GPU_SLOTS", "0,x")])
def test_malformed_settings_are_refused(sandbox: Sandbox, uuid_file: Path, name: str, value: str) -> None:
    sandbox.fake_nvidia_smi(NODE)
    _record(uuid_file, UUID_A)
    result = sandbox.run(CONSUME, "--print-env", env={"COLO_GPU_UUID_FILE": str(uuid_file), name: value})
    assert result.returncode != 0 and name in result.stderr
