"""`colo render`: the program's Kubernetes objects as YAML a user can apply, and nothing secret in them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.output import Unknown

from colo.cli import main
from colo.errors import UsageError
from colo.mock_run import Recorded
from colo.render import APPLY_DIR, UNKNOWN_PLACEHOLDER, kubernetes_object
from colo.stackfiles import list_stacks
from tests.apply_dir import apply_directory_problems, objects_in
from tests.stack_edits import edited_local_stack

# the session's renders of every stack (conftest.rendered) are made once, on one worker
pytestmark = pytest.mark.xdist_group("rendered")


def _objects(directory: Path) -> list[dict[str, Any]]:
    return objects_in(directory / APPLY_DIR)


def _with_secrets(tmp_path: Path, stack: str = "local") -> Path:
    source = yaml.safe_load(Path(f"stacks/Pulumi.{stack}.yaml").read_text())
    source["config"]["colo:hfToken"] = {"secure": "v1:ciphertext"}
    source["config"]["colo:vllmApiKey"] = {"secure": "v1:ciphertext"}
    path = tmp_path / f"Pulumi.{stack}-secrets.yaml"
    path.write_text(yaml.safe_dump(source))
    return path


@pytest.mark.parametrize("stack", list_stacks())
def test_the_apply_directory_holds_only_objects_kubectl_decodes_and_each_validates(
    rendered: dict[str, Path], stack: str
) -> None:
    assert apply_directory_problems(rendered[stack] / APPLY_DIR) == []


def test_the_apply_directory_of_a_stack_with_secrets_holds_only_objects_safe_to_apply(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    assert main(["render", "--config", str(_with_secrets(tmp_path)), "--out", str(out)]) == 0
    assert apply_directory_problems(out / APPLY_DIR) == []
    assert "Secret" not in {body["kind"] for body in _objects(out)}


def test_the_summaries_sit_beside_the_apply_directory_not_in_it(rendered: dict[str, Path]) -> None:
    out = rendered["prod"]
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        APPLY_DIR,
        "summary-gpu-0.svg",  # each GPU's budget (tests/cli/test_budget_pictures.py)
        "summary-gpu-1.svg",
        "summary-gpu-2.svg",
        "summary.json",
        "summary.md",
    ]


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
    deployment = yaml.safe_load(next((out / APPLY_DIR).glob("*-deployment-qwen27b.yaml")).read_text())
    assert deployment["spec"]["template"]["spec"]["initContainers"][0]["name"] == "sync-qwen27b-llm"
    assert apply_directory_problems(out / APPLY_DIR) == []


@pytest.mark.parametrize("stack", list_stacks())
def test_files_are_ordered_for_kubectl_apply_and_named_after_their_object(
    rendered: dict[str, Path], stack: str
) -> None:
    directory = rendered[stack] / APPLY_DIR
    names = sorted(p.name for p in directory.iterdir())
    kinds = [yaml.safe_load((directory / n).read_text())["kind"] for n in names]
    assert kinds[0] == "Namespace"
    assert kinds.index("Deployment") > max(
        i for i, k in enumerate(kinds) if k in ("ConfigMap", "PersistentVolumeClaim")
    )
    for name in names:
        body = yaml.safe_load((directory / name).read_text())
        assert body["metadata"]["name"] in name
        assert body["kind"].lower() in name


def test_numbers_come_out_as_integers(rendered: dict[str, Path]) -> None:
    directory = rendered["prod"] / APPLY_DIR
    deployment = yaml.safe_load(next(directory.glob("*-deployment-qwen27b.yaml")).read_text())
    assert deployment["spec"]["replicas"] == 1
    assert isinstance(deployment["spec"]["replicas"], int)
    llm = next(c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "llm")
    assert isinstance(llm["ports"][0]["containerPort"], int)
    assert isinstance(llm["startupProbe"]["failureThreshold"], int)


def _tree(directory: Path) -> dict[str, str]:
    return {p.relative_to(directory).as_posix(): p.read_text() for p in directory.rglob("*") if p.is_file()}


def test_rendering_twice_gives_identical_files(rendered: dict[str, Path], tmp_path: Path) -> None:
    assert main(["render", "--stack", "dev", "--out", str(tmp_path)]) == 0
    assert _tree(rendered["dev"]) == _tree(tmp_path)


def test_summary_lists_the_objects_and_the_other_resources(rendered: dict[str, Path]) -> None:
    summary = json.loads((rendered["prod"] / "summary.json").read_text())
    assert summary["stack"] == "prod"
    assert summary["apply"] == f"kubectl apply -f {APPLY_DIR}/"
    assert sorted(summary["kubernetes_objects"]) == sorted(
        f"{APPLY_DIR}/{p.name}" for p in (rendered["prod"] / APPLY_DIR).iterdir()
    )
    assert isinstance(summary["other_resources"], list)
    assert "# colo render: stack prod" in (rendered["prod"] / "summary.md").read_text()


def test_a_secret_is_left_out_and_the_command_that_creates_it_is_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["render", "--config", str(_with_secrets(tmp_path)), "--out", str(out)]) == 0
    commands = [
        'kubectl -n colo create secret generic hf-token --from-literal=token="$HF_TOKEN"',
        'kubectl -n colo create secret generic vllm-api-key --from-literal=token="$VLLM_API_KEY"',
    ]
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert [s["command"] for s in summary["secrets_to_create"]] == commands
    for command in commands:
        assert f"  {command}\n" in printed
        assert command in (out / "summary.md").read_text()
    deployment = next(body for body in _objects(out) if body["kind"] == "Deployment")
    llm = deployment["spec"]["template"]["spec"]["containers"][-1]
    env = {e["name"]: e.get("valueFrom") for e in llm["env"]}
    assert env["HF_TOKEN"]["secretKeyRef"] == {"key": "token", "name": "hf-token"}
    assert env["VLLM_API_KEY"]["secretKeyRef"] == {"key": "token", "name": "vllm-api-key"}


def test_the_hf_token_never_reaches_the_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["render", "--config", str(_with_secrets(tmp_path)), "--out", str(out)]) == 0
    everything = "".join(_tree(out).values())
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
    return edited_local_stack(tmp_path, lambda values: values.update(config))


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


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_preview_render_of_a_managed_stack_shows_values_known_after_deploy_as_a_placeholder(
    rendered: dict[str, Path], stack: str, tmp_path: Path
) -> None:
    assert main(["render", "--stack", stack, "--out", str(tmp_path), "--preview"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    attachments = [r for r in summary["other_resources"] if r["type"].endswith("RolePolicyAttachment")]
    assert attachments and all(r["inputs"]["role"] == UNKNOWN_PLACEHOLDER for r in attachments)
    assert UNKNOWN_PLACEHOLDER in (tmp_path / "summary.md").read_text()
    # The Kubernetes side depends on no value computed at deploy: its files are the same as after `up`.
    assert _tree(tmp_path / APPLY_DIR) == _tree(rendered[stack] / APPLY_DIR)


def test_a_kubernetes_object_that_needs_a_value_known_only_after_deploy_is_refused_not_written() -> None:
    configmap = Recorded(
        "kubernetes:core/v1:ConfigMap",
        "cm",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"arn": Unknown()}},
        None,
        True,
    )
    with pytest.raises(UsageError, match="render without --preview"):
        kubernetes_object(configmap)
