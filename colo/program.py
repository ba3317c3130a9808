"""The Pulumi program: stack config -> validated config -> plan -> components. No arithmetic here.

Anything wrong with the config or the plan raises before the first resource is registered, so a bad
stack never produces a partial deployment.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
from pulumi.runtime.config import CONFIG, get_config_env, is_config_secret

from colo.components.errors import ProgramError
from colo.config import StackConfig, parse_stack_config
from colo.errors import ColoError, InfeasiblePlanError
from colo.plan.kubernetes_spec import kubernetes_spec
from colo.plan.node_pool import managed_node_pool
from colo.plan.report import plan_view
from colo.plan.stack import Plan, make_plan
from colo.profiles import s3_profile_reader

PREFIX = "colo:"


def _colo_keys() -> list[str]:
    """Every `colo:` key the engine handed over, so an unknown one is an error rather than ignored."""
    keys = {**get_config_env(), **CONFIG.get()}
    return sorted(key.removeprefix(PREFIX) for key in keys if key.startswith(PREFIX))


def read_config() -> tuple[StackConfig, pulumi.Output[str] | None]:
    cfg = pulumi.Config("colo")
    raw: dict[str, Any] = {}
    for key in _colo_keys():
        if key == "hfToken":
            continue
        text = cfg.get(key)
        try:
            raw[key] = json.loads(text) if text is not None else None
        except json.JSONDecodeError:
            raw[key] = text  # a plain string where an object belongs: the schema names the path
    hf_token = cfg.get_secret("hfToken")
    plaintext_token = hf_token is not None and not is_config_secret(f"{PREFIX}hfToken")
    region = pulumi.Config("aws").get("region")
    return parse_stack_config(
        raw, hf_token_set=hf_token is not None, plaintext_token=plaintext_token, aws_region=region
    ), hf_token


def plan_stack(config: StackConfig) -> Plan:
    plan = make_plan(config, s3_profile=s3_profile_reader(config))
    if not plan.feasible:
        raise InfeasiblePlanError(list(plan.problems))
    return plan


def run() -> None:
    try:
        config, hf_token = read_config()
        plan = plan_stack(config)
        pool, cluster = managed_node_pool(config, plan), kubernetes_spec(config, plan)
    except ColoError as error:
        raise ProgramError(error) from None
    # AWS side (GPU node pool) first: the Kubernetes side depends on its nodes when colo manages them.
    from colo.components.node_pool import declare_node_pool

    node_pool = declare_node_pool(pool)
    from colo.components.kubernetes import declare_kubernetes

    declare_kubernetes(cluster, hf_token=hf_token, depends_on=[node_pool] if node_pool else [])
    pulumi.export("plan", plan_view(plan))
