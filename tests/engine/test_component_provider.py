"""The real Pulumi CLI reads colo's package schema from its provider plugin, `pulumi-resource-colo`: what
`pulumi package add` and SDK generation for TypeScript, Go and the rest start from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.conftest import Engine

pytestmark = [pytest.mark.engine, pytest.mark.xdist_group("engine")]

# Installed beside this interpreter by the project's entry points (pyproject.toml [project.scripts]).
PLUGIN = Path(sys.executable).parent / "pulumi-resource-colo"


def test_the_cli_reads_the_colocated_pair_schema_from_the_plugin(engine: Engine) -> None:
    finished = subprocess.run(
        ["pulumi", "package", "get-schema", str(PLUGIN)],
        env=engine.environment(),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stderr
    schema = json.loads(finished.stdout)
    assert schema["name"] == "colo"
    pair = schema["resources"]["colo:index:ColocatedPair"]
    assert pair["isComponent"] is True
    assert set(pair["requiredInputs"]) == {"llm", "embedding", "namespace", "modelClaim"}
    assert pair["inputProperties"]["llm"] == {"$ref": "#/types/colo:index:Server", "plain": True}
    assert "plain" not in pair["inputProperties"]["namespace"]
    assert pair["properties"]["kvTokens"]["additionalProperties"] == {"type": "integer"}
    # A server's keys as a stack file takes them (generated from the stack schema): vllm.version defaults there.
    assert "required" not in schema["types"]["colo:index:VllmRelease"]
    assert {"weightsUri", "profile", "dtype", "speculative"} <= set(
        schema["types"]["colo:index:Server"]["properties"]
    )
