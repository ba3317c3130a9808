"""Turn raw config values (as Pulumi hands them to a program) into a StackConfig, or one ConfigError."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from colo.config.catalog_checks import catalog_problems
from colo.config.key_suggestions import known_keys
from colo.config.schema import Budget, Cluster, Network, NodePool, Pair, StackConfig, Storage
from colo.echo import shown
from colo.errors import ConfigError, Problem
from colo.suggest import unknown_word

PROJECT = "colo"
# Top-level keys of the `colo:` namespace; the secret hfToken is read separately and never parsed here.
CONFIG_KEYS = ("cluster", "nodePool", "storage", "budget", "network", "observability", "pairs")
SECRET_KEYS = ("hfToken", "vllmApiKey")


def config_path(loc: Sequence[int | str]) -> str:
    """Render a pydantic location as the path a user writes in stack config: colo:pairs[1].llm.maxModelLen."""
    if not loc:
        return f"{PROJECT}:<root>"
    head, *rest = loc
    text = f"{PROJECT}:{to_camel(shown(str(head)))}"
    for part in rest:
        text += f"[{part}]" if isinstance(part, int) else f".{to_camel(shown(part))}"
    return text


def _message(error: Mapping[str, Any]) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        *parent, key = error["loc"]
        known = known_keys(StackConfig, parent)
        return unknown_word("key", str(key), known)
    if kind == "missing":
        return "required; add it to the stack config"
    message = str(error["msg"])
    return message.removeprefix("Value error, ")


def parse_stack_config(
    raw: Mapping[str, Any],
    *,
    hf_token_set: bool = False,
    plaintext_token: bool = False,
    aws_region: str | None = None,
    aws_profile: str | None = None,
    project_dir: Path | None = None,
    vllm_api_key_set: bool = False,
    plaintext_secrets: Sequence[str] = (),
    hub_token: str | None = None,
) -> StackConfig:
    """Validate every top-level key at once so the user sees all problems in one run.

    The keyword arguments are facts from outside the colo namespace: whether each secret is set (and
    `plaintext_token`, `plaintext_secrets`: which are stored in plain text), the stack's `aws:region`
    (what the weight-sync step passes to boto3 in the pod) and `aws:profile` (the credentials colo's own
    AWS calls use, as the AWS provider does), the project directory relative profile
    paths are read from, and colo:hfToken's value where the engine hands it over (`hub_token`, for reading
    gated models from the Hub; HF_TOKEN otherwise).
    """
    unknown = [key for key in raw if key not in CONFIG_KEYS and key not in SECRET_KEYS]
    problems = [
        Problem(
            f"{PROJECT}:{shown(key)}",
            unknown_word("config key", str(key), (*CONFIG_KEYS, *SECRET_KEYS)),
        )
        for key in unknown
    ]
    plaintext = sorted({*plaintext_secrets, *(["hfToken"] if plaintext_token else [])})
    problems += [
        Problem(
            f"{PROJECT}:{key}",
            "is stored in plain text in the stack file; remove it and run "
            f"`pulumi config set --secret {key} <value>` so only ciphertext is committed",
        )
        for key in plaintext
    ]
    values = {key: raw[key] for key in CONFIG_KEYS if key in raw and raw[key] is not None}
    values["hfTokenSet"] = hf_token_set
    values["vllmApiKeySet"] = vllm_api_key_set
    values["awsRegion"] = aws_region
    values["awsProfile"] = aws_profile
    values["projectDir"] = project_dir
    values["hubToken"] = hub_token
    return _validated(values, problems)


def _validated(values: Mapping[str, Any], problems: list[Problem]) -> StackConfig:
    """The StackConfig of `values`, or one ConfigError with `problems` and everything the schema and the
    catalog checks find, each at its config path."""
    try:
        config = StackConfig.model_validate(values)
    except ValidationError as exc:
        problems = [*problems, *(Problem(config_path(err["loc"]), _message(err)) for err in exc.errors())]
        raise ConfigError(problems) from None
    problems = [*problems, *catalog_problems(config)]
    if problems:
        raise ConfigError(problems)
    return config


def assemble_stack_config(
    *,
    cluster: Cluster,
    node_pool: NodePool,
    storage: Storage,
    budget: Budget,
    pairs: Sequence[Pair | Mapping[str, Any]],
    network: Network | None = None,
    hub_token: str | None = None,
    aws_region: str | None = None,
    project_dir: Path | None = None,
) -> StackConfig:
    """The stack config of typed pieces (what a component is given), checked as a stack file with those keys is
    checked: each piece as it is (it was validated when it was made), the stack's own rules, the catalog checks.
    `pairs` are Pairs, or a name and the typed servers by role. Raises ConfigError naming `colo:` paths."""
    values: dict[str, Any] = {
        "cluster": cluster,
        "nodePool": node_pool,
        "storage": storage,
        "budget": budget,
        "pairs": list(pairs),
        "awsRegion": aws_region,
        "projectDir": project_dir,
        "hubToken": hub_token,
    }
    if network is not None:
        values["network"] = network
    return _validated(values, [])
