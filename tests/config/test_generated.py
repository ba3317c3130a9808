"""The stack schema is defined once (colo/config/schema.py); the stack file's JSON Schema (`colo schema`), the
config reference (docs/config.md) and the server types of colo's component for other languages are generated
from it, and the generated files are current."""

from __future__ import annotations

import json
from typing import Any, get_type_hints

import pytest
import yaml
from jsonschema import Draft202012Validator

from colo.cli import main
from colo.components.multi_language_types import Server, VllmBuild, VllmRelease
from colo.config.generate import generated_files, stack_file_schema
from colo.config.schema import ServerSpec, VllmImage
from colo.config.schema import VllmBuild as SchemaVllmBuild
from colo.stackfiles import list_stacks, stack_path
from tests.paths import REPO_ROOT

HOSTILE = REPO_ROOT / "tests" / "hostile" / "corpus"


@pytest.mark.parametrize("path", sorted(str(p) for p in generated_files()))
def test_the_generated_file_is_what_the_schema_says(path: str) -> None:
    expected = generated_files()[next(p for p in generated_files() if str(p) == path)]
    assert (REPO_ROOT / path).read_text() == expected, f"{path} is stale: run python -m colo.config.generate"


def validator() -> Draft202012Validator:
    schema = stack_file_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@pytest.mark.parametrize("stack", list_stacks())
def test_every_shipped_stack_file_is_valid_by_the_json_schema(stack: str) -> None:
    assert list(validator().iter_errors(yaml.safe_load(stack_path(stack).read_text()))) == []


@pytest.mark.parametrize("name", ["ok-labels", "ok-extra-args", "ok-weights-from-s3"])
def test_valid_stacks_of_the_hostile_corpus_are_valid_by_the_json_schema(name: str) -> None:
    assert list(validator().iter_errors(yaml.safe_load((HOSTILE / f"{name}.yaml").read_text()))) == []


def local_config() -> dict[str, Any]:
    source: dict[str, Any] = yaml.safe_load(stack_path("local").read_text())
    return source


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"colo:pairsx": []}, "patternProperties"),  # any colo: key the schema does not name
        ({"colo:hfToken": "hf_plaintext"}, "colo:hfToken"),
        ({"colo:cluster": {"gpuPairing": "nvlink"}}, "gpuPairing"),
    ],
    ids=["unknown-colo-key", "plaintext-secret", "unknown-pairing"],
)
def test_the_json_schema_refuses_what_colo_refuses(change: dict[str, Any], where: str) -> None:
    source = local_config()
    source["config"].update(change)
    errors = list(validator().iter_errors(source))
    assert errors
    said = [json.dumps([*e.absolute_path, *e.absolute_schema_path], default=str) + e.message for e in errors]
    assert any(where in text for text in said), said


def test_other_namespaces_keys_are_left_to_their_owners() -> None:
    source = local_config()
    source["config"]["aws:region"] = "eu-west-1"
    assert list(validator().iter_errors(source)) == []


def test_colo_schema_prints_the_stack_files_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == stack_file_schema()


def test_other_languages_are_offered_every_server_key_of_the_stack_schema() -> None:
    assert set(get_type_hints(Server)) == set(ServerSpec.model_fields)
    assert set(get_type_hints(VllmRelease)) == set(VllmImage.model_fields)


def test_what_other_languages_are_not_offered_is_said_in_the_generated_file() -> None:
    """Build facts that are a version or false (either type) have no schema type: they are named, not dropped."""
    left_out = set(SchemaVllmBuild.model_fields) - set(get_type_hints(VllmBuild))
    assert left_out == {"flashinfer", "triton_kernels", "deep_gemm", "deep_ep", "pplx_kernels", "xformers"}
    text = (REPO_ROOT / "colo" / "components" / "multi_language_types.py").read_text()
    assert "# Not offered here: flashinfer, tritonKernels, deepGemm, deepEp, pplxKernels, xformers" in text
