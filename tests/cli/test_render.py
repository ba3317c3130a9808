"""`colo render`: the program's Kubernetes objects as YAML a user can apply, and nothing secret in them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from colo.cli import main
from colo.stackfiles import list_stacks
from tests.components.crd_schemas import assert_valid_custom_resource, is_custom_resource

KUBERNETES_VERSION = "1.34.0"


def _kubernetes_validate() -> str:
    return str(Path(sys.executable).with_name("kubernetes-validate"))


def _assert_valid_for_kubernetes(directory: Path) -> None:
    """Every manifest in `directory` passes kubernetes-validate --strict against the 1.34 schemas; the
    Prometheus operator's kinds, which it has no schema for, pass their CRDs' own (tests/components)."""
    files = sorted(
        str(p) for p in directory.glob("*.yaml") if not is_custom_resource(yaml.safe_load(p.read_text()))
    )
    assert files
    result = subprocess.run(
        [_kubernetes_validate(), "--strict", "--quiet", "-k", KUBERNETES_VERSION, *files],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Couldn't find schema" not in result.stdout + result.stderr
    for path in directory.glob("*.yaml"):
        body = yaml.safe_load(path.read_text())
        if is_custom_resource(body):
            assert_valid_custom_resource(body)


def _objects(directory: Path) -> list[dict[str, object]]:
    return [yaml.safe_load(path.read_text()) for path in sorted(directory.glob("*.yaml"))]


@pytest.mark.parametrize("stack", list_stacks())
def test_every_manifest_validates_strictly_against_kubernetes_1_34(
    rendered: dict[str, Path], stack: str
) -> None:
    _assert_valid_for_kubernetes(rendered[stack])


def test_a_stack_that_copies_weights_from_s3_validates_too(tmp_path: Path) -> None:
    source = yaml.safe_load(Path("stacks/Pulumi.prod.yaml").read_text())
    source["config"]["colo:pairs"][0]["llm"]["weightsUri"] = "s3://models/qwen3.6-27b-fp8/"
    source["config"]["colo:storage"].update(
        syncImage="registry.example/colo-sync:0.1.0", syncServiceAccount="model-reader"
    )
    stack = tmp_path / "Pulumi.synced.yaml"
    stack.write_text(yaml.safe_dump(source))
    out = tmp_path / "out"
    assert main(["render", "--config", str(stack), "--out", str(out)]) == 0
    deployment = yaml.safe_load(next(out.glob("*-deployment-qwen27b.yaml")).read_text())
    assert deployment["spec"]["template"]["spec"]["initContainers"][0]["name"] == "sync-qwen27b-llm"
    _assert_valid_for_kubernetes(out)


@pytest.mark.parametrize("stack", list_stacks())
def test_files_are_ordered_for_kubectl_apply_and_named_after_their_object(
    rendered: dict[str, Path], stack: str
) -> None:
    names = sorted(p.name for p in rendered[stack].glob("*.yaml"))
    kinds = [yaml.safe_load((rendered[stack] / n).read_text())["kind"] for n in names]
    assert kinds[0] == "Namespace"
    assert kinds.index("Deployment") > max(
        i for i, k in enumerate(kinds) if k in ("ConfigMap", "PersistentVolumeClaim")
    )
    for name in names:
        body = yaml.safe_load((rendered[stack] / name).read_text())
        assert body["metadata"]["name"] in name
        assert body["kind"].lower() in name


def test_numbers_come_out_as_integers(rendered: dict[str, Path]) -> None:
    deployment = yaml.safe_load(next(rendered["prod"].glob("*-deployment-qwen27b.yaml")).read_text())
    assert deployment["spec"]["replicas"] == 1
    assert isinstance(deployment["spec"]["replicas"], int)
    llm = next(c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "llm")
    assert isinstance(llm["ports"][0]["containerPort"], int)
    assert isinstance(llm["startupProbe"]["failureThreshold"], int)


def test_rendering_twice_gives_identical_files(rendered: dict[str, Path], tmp_path: Path) -> None:
    assert main(["render", "--stack", "dev", "--out", str(tmp_path)]) == 0
    first = {p.name: p.read_text() for p in rendered["dev"].iterdir()}
    second = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert first == second


def test_summary_lists_the_objects_and_the_other_resources(rendered: dict[str, Path]) -> None:
    summary = json.loads((rendered["prod"] / "summary.json").read_text())
    assert summary["stack"] == "prod"
    assert sorted(summary["kubernetes_objects"]) == sorted(p.name for p in rendered["prod"].glob("*.yaml"))
    assert isinstance(summary["other_resources"], list)
    assert "# colo render: stack prod" in (rendered["prod"] / "summary.md").read_text()


def test_the_hf_token_never_reaches_the_files(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.withtoken.yaml"
    source = yaml.safe_load(Path("stacks/Pulumi.local.yaml").read_text())
    source["config"]["colo:hfToken"] = {"secure": "v1:ciphertext"}
    stack.write_text(yaml.safe_dump(source))
    out = tmp_path / "out"
    assert main(["render", "--config", str(stack), "--out", str(out)]) == 0
    secret_files = list(out.glob("*-secret-hf-token.yaml"))
    assert len(secret_files) == 1
    text = secret_files[0].read_text()
    assert text.startswith("# ")
    assert yaml.safe_load(text)["stringData"] == {"token": "REPLACE-ME"}
    everything = "".join(p.read_text() for p in out.iterdir())
    # The mock runtime stands in a placeholder for the undecryptable secret; it must not be copied out.
    assert "mock-secret-value" not in everything
    assert "ciphertext" not in everything


def test_invalid_config_exits_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = tmp_path / "Pulumi.bad.yaml"
    stack.write_text(yaml.safe_dump({"config": {"colo:cluster": {"gpuPairing": "magic"}, "colo:pairs": []}}))
    out = tmp_path / "out"
    assert main(["render", "--config", str(stack), "--out", str(out)]) == 2
    assert "colo:cluster.gpuPairing" in capsys.readouterr().err
    assert not out.exists()


def test_infeasible_plan_exits_1_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = yaml.safe_load(Path("stacks/Pulumi.prod.yaml").read_text())
    source["config"]["colo:cluster"]["nodeImage"] = "bottlerocket-nvidia"
    stack = tmp_path / "Pulumi.rocket.yaml"
    stack.write_text(yaml.safe_dump(source))
    out = tmp_path / "out"
    assert main(["render", "--config", str(stack), "--out", str(out)]) == 1
    assert "colo:cluster.gpuPairing" in capsys.readouterr().err
    assert not out.exists()


def _local_with(tmp_path: Path, **config: object) -> Path:
    source = yaml.safe_load(Path("stacks/Pulumi.local.yaml").read_text())
    source["config"].update(config)
    stack = tmp_path / "Pulumi.edited.yaml"
    stack.write_text(yaml.safe_dump(source))
    return stack


def test_an_unknown_colo_key_is_refused_by_the_program_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = _local_with(tmp_path, **{"colo:pair": [{"name": "typo"}]})
    assert main(["render", "--config", str(stack), "--out", str(tmp_path / "out")]) == 2
    assert "colo:pair: unknown config key" in capsys.readouterr().err


def test_a_plaintext_hf_token_is_refused_with_the_secret_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = _local_with(tmp_path, **{"colo:hfToken": "hf_plaintext"})
    assert main(["render", "--config", str(stack), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "pulumi config set --secret hfToken" in err
    assert "hf_plaintext" not in err
    assert main(["plan", "--config", str(stack)]) == 2


def test_a_stack_file_whose_config_is_not_a_mapping_is_an_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = tmp_path / "Pulumi.odd.yaml"
    stack.write_text("config: 3\n")
    assert main(["plan", "--config", str(stack)]) == 2
    assert "must be a mapping" in capsys.readouterr().err
