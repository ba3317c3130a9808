"""The Pulumi program: stack config -> validated config -> plan -> components. No arithmetic here.

Anything wrong with the config or the plan raises before the first resource is registered, so a bad
stack never produces a partial deployment.
"""

from __future__ import annotations

from typing import Any

import pulumi

from colo.config import CONFIG_KEYS, StackConfig, parse_stack_config
from colo.errors import InfeasiblePlanError
from colo.plan.report import plan_view
from colo.plan.stack import Plan, make_plan


def read_config() -> tuple[StackConfig, pulumi.Output[str] | None]:
    cfg = pulumi.Config("colo")
    raw: dict[str, Any] = {}
    for key in CONFIG_KEYS:
        value = cfg.get_object(key)
        if value is not None:
            raw[key] = value
    hf_token = cfg.get_secret("hfToken")
    region = pulumi.Config("aws").get("region")
    return parse_stack_config(raw, hf_token_set=hf_token is not None, aws_region=region), hf_token


def plan_stack(config: StackConfig) -> Plan:
    from colo.cli.plan_cmd import s3_profile_reader

    plan = make_plan(config, s3_profile=s3_profile_reader(config))
    if not plan.feasible:
        raise InfeasiblePlanError(list(plan.problems))
    return plan


def run() -> None:
    config, hf_token = read_config()
    plan = plan_stack(config)
    # AWS side (GPU node pool) first: the Kubernetes side depends on its nodes when colo manages them.
    from colo.components.node_pool import declare_node_pool

    node_pool = declare_node_pool(config, plan)
    from colo.components.kubernetes import declare_kubernetes

    declare_kubernetes(config, plan, hf_token=hf_token, depends_on=[node_pool] if node_pool else [])
    pulumi.export("plan", plan_view(plan))
