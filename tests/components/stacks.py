"""Stack variants for the component tests: the checked-in stacks, changed one setting at a time."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from colo.stackfiles import StackFile, load_stack

DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def variant(
    stack: str, *, secret_token: bool = False, secret_api_key: bool = False, **changes: dict[str, Any]
) -> StackFile:
    """`changes` maps a top-level colo key to fields merged into it, e.g. cluster={"gpuPairing": "dra"}.
    `pairs` takes {"all": {...}} merged into every server of every pair. `secret_token` and
    `secret_api_key` set colo:hfToken and colo:vllmApiKey as Pulumi secrets."""
    base = load_stack(stack)
    values = copy.deepcopy(base.values)
    for key, fields in changes.items():
        if key == "pairs":
            for pair in values["pairs"]:
                for role in ("llm", "embedding", "reranker"):
                    if role in pair:
                        pair[role] = {**pair[role], **fields["all"]}
        else:
            values[key] = {**values.get(key, {}), **fields}
    secrets = set(base.secret_keys)
    for key, wanted in (("hfToken", secret_token), ("vllmApiKey", secret_api_key)):
        if wanted:
            values[key] = {"secure": "ciphertext"}
            secrets.add(key)
    return replace(base, values=values, secret_keys=frozenset(secrets))


def pod_spec(deployment_inputs: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = deployment_inputs["spec"]["template"]["spec"]
    return spec


def containers_in_start_order(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec["containers"]]


def by_name(containers: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in containers}


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def limits_of(container: dict[str, Any]) -> dict[str, str]:
    limits: dict[str, str] = container.get("resources", {}).get("limits", {})
    return limits
