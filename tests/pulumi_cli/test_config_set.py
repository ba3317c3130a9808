"""Stack files written by `pulumi config set` are read by colo as the Pulumi engine hands them over.

Every YAML file in config_set/ was written by the Pulumi SDK code that `pulumi config set` runs (the
generator in config_set/generate, SDK v3.272.0), byte for byte: local.yaml is stacks/Pulumi.local.yaml as
it was then, each local.<edit>.yaml is local.yaml after one command, and cli-only.yaml is a stack built
from `pulumi stack init` by `pulumi config set` alone. To regenerate after a CLI upgrade:
`cd tests/pulumi_cli/config_set/generate && go run . ../../../.. ..`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from colo.cli.common import load_config
from colo.config import StackConfig
from colo.config.cli_values import typed_text
from colo.errors import ConfigError
from colo.mock_run import ProgramRun, run_program
from colo.stackfiles import StackFile, load_stack_file

WRITTEN = Path(__file__).parent / "config_set"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
# A path segment: ["a.key"], [0] or a plain name, as the CLI parses --path keys.
PATH_SEGMENT = re.compile(r'\["([^"]+)"\]|\[(\d+)\]|([^.\[\]]+)')


def stack_file(name: str) -> StackFile:
    return load_stack_file(WRITTEN / f"{name}.yaml", stack=name)


def settings(name: str) -> dict[str, Any]:
    """The stack's config as colo validated it, keyed as the stack file spells it."""
    config: StackConfig = load_config(stack_file(name))
    dumped: dict[str, Any] = config.model_dump(by_alias=True)
    return dumped


def at(settings: dict[str, Any], path: str) -> Any:
    """The value at a `pulumi config set --path` path such as pairs[0].llm.maxModelLen."""
    value: Any = settings
    for quoted, index, name in PATH_SEGMENT.findall(path):
        value = value[int(index)] if index else value[quoted or name]
    return value


def llm_container(run: ProgramRun) -> dict[str, Any]:
    (deployment,) = run.mocks.of_type(DEPLOYMENT)
    containers = deployment.inputs["spec"]["template"]["spec"]["containers"]
    (llm,) = [c for c in containers if c["name"] == "llm"]
    return dict(llm)


def test_path_set_max_model_len_is_written_as_a_number_and_changes_only_that_field() -> None:
    assert "        maxModelLen: 16384\n" in (WRITTEN / "local.max-model-len.yaml").read_text()
    expected = settings("local")
    expected["pairs"][0]["llm"]["maxModelLen"] = 16384
    assert settings("local.max-model-len") == expected


def test_path_set_max_model_len_reaches_the_llm_command_line_through_the_program() -> None:
    args = llm_container(run_program(stack_file("local.max-model-len")))["args"]
    assert args[args.index("--max-model-len") + 1] == "16384"


def test_path_set_spare_gpus_is_written_as_a_number_and_changes_only_that_field() -> None:
    assert "    spareGpus: 1\n" in (WRITTEN / "local.spare-gpus.yaml").read_text()
    expected = settings("local")
    expected["nodePool"]["spareGpus"] = 1
    assert settings("local.spare-gpus") == expected


def test_secret_hf_token_is_a_secure_value_the_program_receives_as_a_secret() -> None:
    text = (WRITTEN / "local.hf-token.yaml").read_text()
    assert "  colo:hfToken:\n    secure: v1:" in text
    secret = stack_file("local.hf-token")
    assert secret.secret_keys == {"hfToken"}
    config, secret_keys = secret.engine_config("placeholder")
    assert secret_keys == ["colo:hfToken"] and config["colo:hfToken"] == "placeholder"
    expected = settings("local")
    expected["hfTokenSet"] = True
    assert settings("local.hf-token") == expected
    secrets = run_program(secret).mocks.of_type("kubernetes:core/v1:Secret")
    assert len(secrets) == 1


def test_a_typed_value_that_is_no_cpu_quantity_is_refused_at_its_path() -> None:
    assert "        cpu: true\n" in (WRITTEN / "local.cpu-true.yaml").read_text()
    with pytest.raises(ConfigError) as refused:
        load_config(stack_file("local.cpu-true"))
    assert "colo:pairs[0].llm.cpu: 'true' is not a Kubernetes CPU quantity" in refused.value.render()


# What each `pulumi config set --path` of the generator's cli-only stack wrote (the comment), and what
# colo must read back.
CLI_ONLY = [
    ("cluster.kubernetesVersion", "1.34"),  # a quoted string: not an integer
    ("cluster.gpuPairing", "time-slice"),
    ("cluster.nativeSidecars", True),  # a boolean
    ("nodePool.mode", "existing"),
    ('nodePool.nodeSelector["nvidia.com/gpu.present"]', "true"),  # a boolean, into a text field
    ('nodePool.nodeSelector["colo.dev/pool"]', "7"),  # a number, into a text field
    ("nodePool.spareGpus", 1),
    ("storage.storageClass", "standard"),
    ("storage.size", "100Gi"),
    ("storage.readThroughputMiBps", 312.5),  # "312.5": the CLI types no decimals
    ("budget.safetyMarginMiB", 768),
    ("budget.embeddingConcurrency", 1.5),  # "1.5"
    ("pairs[0].name", "chat"),
    ("pairs[0].llm.model", "Qwen/Qwen3-8B-FP8"),
    ("pairs[0].llm.maxModelLen", 16384),
    ("pairs[0].llm.enforceEager", False),
    ("pairs[0].llm.cpu", "4"),  # a number, into a text field
    ("pairs[0].llm.memory", "24Gi"),
    ("pairs[0].llm.extraArgs[0]", "--max-log-len"),
    ("pairs[0].llm.extraArgs[1]", "100"),  # a number, into a text field
    ("pairs[0].llm.vllm.version", "0.19.1"),
    ("pairs[0].embedding.model", "Qwen/Qwen3-Embedding-0.6B"),
    ("pairs[0].embedding.vllm.version", "0.19.1"),
    ("hfTokenSet", True),  # pulumi config set --secret hfToken ...
]


@pytest.mark.parametrize(("path", "value"), CLI_ONLY, ids=[path for path, _ in CLI_ONLY])
def test_every_value_of_a_stack_written_only_by_the_cli_reads_back(path: str, value: object) -> None:
    read = at(settings("cli-only"), path)
    assert read == value and type(read) is type(value)


def test_a_stack_written_only_by_the_cli_runs_as_a_program() -> None:
    run = run_program(stack_file("cli-only"))
    llm = llm_container(run)
    assert llm["args"][-2:] == ["--max-log-len", "100"]
    assert llm["resources"]["requests"]["cpu"] == "4"
    (deployment,) = run.mocks.of_type(DEPLOYMENT)
    selector = deployment.inputs["spec"]["template"]["spec"]["nodeSelector"]
    assert selector["nvidia.com/gpu.present"] == "true" and selector["colo.dev/pool"] == "7"


@pytest.mark.parametrize(
    ("written", "text"),
    [(True, "true"), (False, "false"), (4, "4"), (18446744073709551615, "18446744073709551615")],
)
def test_a_text_field_takes_back_what_the_cli_typed(written: object, text: str) -> None:
    assert typed_text(written) == text


@pytest.mark.parametrize("kept", ["0123", "1.5", 1.5, None])
def test_values_the_cli_left_as_they_were_pass_through(kept: object) -> None:
    assert typed_text(kept) == kept
