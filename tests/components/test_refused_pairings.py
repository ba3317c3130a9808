"""Pairing choices that cannot work stop the program before it registers anything, naming path and fix."""

from __future__ import annotations

import pytest

from colo.components.errors import ProgramError
from colo.errors import InfeasiblePlanError
from colo.mock_run import RecordingMocks, run_program
from colo.stackfiles import StackFile
from tests.components.stacks import variant

CASES = [
    pytest.param(
        variant("prod", cluster={"nodeImage": "bottlerocket-nvidia"}),
        "colo:cluster.gpuPairing",
        "Use gpuPairing: dra",
        id="uuid-handoff-on-bottlerocket",
    ),
    pytest.param(
        variant("prod", cluster={"gpuPairing": "time-slice"}),
        "colo:nodePool.instanceType",
        "Use a single-GPU instance type",
        id="time-slice-on-multi-gpu-nodes",
    ),
    pytest.param(
        variant("dev", cluster={"kubernetesVersion": "1.33"}),
        "colo:cluster.kubernetesVersion",
        "Upgrade the cluster",
        id="dra-below-1.34",
    ),
]


@pytest.mark.parametrize("preview", [True, False], ids=["preview", "up"])
@pytest.mark.parametrize(("stack_file", "path", "fix"), CASES)
def test_refused_before_any_resource(stack_file: StackFile, path: str, fix: str, preview: bool) -> None:
    mocks = RecordingMocks()
    with pytest.raises(ProgramError) as raised:  # a RunError: the engine prints it without a traceback
        run_program(stack_file, preview=preview, mocks=mocks)
    assert isinstance(raised.value.error, InfeasiblePlanError)
    message = str(raised.value)
    assert path in message
    assert fix in message
    assert mocks.resources == []
