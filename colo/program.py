"""The Pulumi program: stack config -> validated config -> plan -> colo's public components. No arithmetic here.

Anything wrong with the config or the plan raises before the first resource is registered, so a bad
stack never produces a partial deployment. The components (colo.components) are the ones any program can
use; the stack is planned once and each component is handed its part of that plan.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import get_config, get_config_env, get_root_resource, is_config_secret

from colo.cluster.identity import check_cluster_identity
from colo.components import GpuNodePool, GpuNodePoolArgs, ProgramError
from colo.components.cluster_provider import kubernetes_provider, render_directory
from colo.components.karpenter import KarpenterNodePool, KarpenterNodePoolArgs
from colo.components.kubernetes import declare_kubernetes
from colo.config import StackConfig, parse_stack_config
from colo.config.cluster_target import ClusterTarget, KubeconfigCluster, cluster_target
from colo.config.load import SECRET_KEYS
from colo.config.schema import KARPENTER_MODES
from colo.errors import ColoError, ConfigError, InfeasiblePlanError, Problem
from colo.plan.kubernetes_spec import kubernetes_spec
from colo.plan.node_pool import managed_node_pool
from colo.plan.report import plan_view
from colo.plan.stack import Plan, make_plan
from colo.profiles import s3_profile_reader
from colo.stackfiles import MOCK_SECRET_VALUE

PREFIX = "colo:"
OUTSIDE_THE_ENGINE = (
    "this is a Pulumi program: it runs inside the Pulumi engine, which hands it the stack's config, and was "
    "started without one. Run `pulumi preview` or `pulumi up` in the project directory (docs/commands.md, 'With the "
    "Pulumi CLI'), or, without the Pulumi CLI, `colo plan --stack STACK` and `colo render --stack STACK "
    "--out DIR`."
)


def require_engine() -> None:
    """Stop with a plain message when started as a script: there is no stack config to read then."""
    # The engine (its language host, an Automation API inline program) and the SDK's mock runtime run the
    # program inside the root Stack they register first; a plain `python __main__.py` has none.
    if get_root_resource() is None:
        print(OUTSIDE_THE_ENGINE, file=sys.stderr)
        raise SystemExit(2)


@dataclass
class Handover:
    """What a runner in this process and the program it runs tell each other where the SDK has no public
    way: the config keys the runner handed the SDK (pulumi.runtime.set_all_config, which nothing public
    lists back), and what the program exported (pulumi.export keeps it on the root Stack, unread but by
    the engine)."""

    config_keys: frozenset[str]
    exports: dict[str, Any] = field(default_factory=dict)


_HANDOVER: ContextVar[Handover | None] = ContextVar("colo_program_handover", default=None)


@contextmanager
def handed_over(config_keys: Iterable[str]) -> Iterator[Handover]:
    """Run a program inside this: it lists `config_keys` as the engine's, and its exports land in the
    Handover yielded (colo.mock_run, colo.inline_engine)."""
    handover = Handover(frozenset(config_keys))
    token = _HANDOVER.set(handover)
    try:
        yield handover
    finally:
        _HANDOVER.reset(token)


def export(name: str, value: Any) -> None:
    """pulumi.export, also kept for the runner that handed the program over (colo render reads it there)."""
    pulumi.export(name, value)
    handover = _HANDOVER.get()
    if handover is not None:
        handover.exports[name] = value


def colo_config_keys() -> list[str]:
    """Every `colo:` key the engine handed over, so an unknown one is an error rather than ignored. The
    Pulumi CLI's language host hands the config in PULUMI_CONFIG (pulumi.runtime.get_config_env, what its
    exec shim reads too); a runner in this process names the keys it set (handed_over)."""
    handover = _HANDOVER.get()
    keys = {*get_config_env(), *(handover.config_keys if handover is not None else ())}
    return sorted(key.removeprefix(PREFIX) for key in keys if key.startswith(PREFIX))


def read_config() -> tuple[StackConfig, dict[str, pulumi.Output[str]]]:
    """The validated config, and the Pulumi secrets that are set (colo:hfToken, colo:vllmApiKey) by key."""
    cfg = pulumi.Config("colo")
    raw: dict[str, Any] = {}
    for key in colo_config_keys():
        if key in SECRET_KEYS:
            continue
        text = cfg.get(key)
        try:
            raw[key] = json.loads(text) if text is not None else None
        except json.JSONDecodeError:
            raw[key] = text  # a plain string where an object belongs: the schema names the path
    secrets = {key: value for key in SECRET_KEYS if (value := cfg.get_secret(key)) is not None}
    aws_config = pulumi.Config("aws")
    # The engine hands the program colo:hfToken decrypted; under the mock runtime it is a placeholder, and the
    # Hub is read with HF_TOKEN as `colo plan` reads it.
    token = get_config(f"{PREFIX}hfToken") if "hfToken" in secrets else None
    config = parse_stack_config(
        raw,
        hf_token_set="hfToken" in secrets,
        vllm_api_key_set="vllmApiKey" in secrets,
        plaintext_secrets=[key for key in secrets if not is_config_secret(f"{PREFIX}{key}")],
        aws_region=aws_config.get("region"),
        aws_profile=aws_config.get("profile"),
        hub_token=token if token != MOCK_SECRET_VALUE else None,
    )
    return config, secrets


def plan_stack(config: StackConfig) -> Plan:
    plan = make_plan(config, s3_profile=s3_profile_reader(config))
    if not plan.feasible:
        raise InfeasiblePlanError(list(plan.problems))
    return plan


# The default provider's settings, which colo's own provider does not read: set, they would be ignored.
AMBIENT_SETTINGS = ("context", "kubeconfig", "cluster")


def stack_cluster(config: StackConfig, render_dir: str | None) -> ClusterTarget:
    """The cluster the stack names; where the program deploys (renders nothing), the kubeconfig context must
    reach the API server the stack names."""
    ignored = [key for key in AMBIENT_SETTINGS if pulumi.Config("kubernetes").get(key) is not None]
    if ignored:
        raise ConfigError(
            [
                Problem(
                    f"kubernetes:{key}",
                    "not read: colo deploys through the cluster the stack names (colo:cluster.kubeconfigContext, "
                    "or the EKS cluster colo:cluster.name with nodePool.mode managed, karpenter or auto); "
                    f"remove it (pulumi config rm kubernetes:{key})",
                )
                for key in ignored
            ]
        )
    target = cluster_target(config)
    if render_dir is None and isinstance(target, KubeconfigCluster):
        check_cluster_identity(target)
    return target


def run() -> None:
    require_engine()
    render_dir = render_directory()
    try:
        config, secrets = read_config()
        target = stack_cluster(config, render_dir)
        plan = plan_stack(config)  # every check of `colo plan`, before any resource is registered
        managed, cluster = managed_node_pool(config, plan) is not None, kubernetes_spec(config, plan)
    except ColoError as error:
        raise ProgramError(error) from None
    # AWS side (GPU node pool) first: the Kubernetes side depends on its nodes when colo manages them.
    provider = kubernetes_provider(target, render_dir)
    node_pool: pulumi.Resource | None = None
    if managed:
        node_pool = GpuNodePool(config.cluster.name, GpuNodePoolArgs.of_stack(config), plan=plan)
    elif config.node_pool.mode in KARPENTER_MODES:
        # nodes Karpenter (or EKS Auto Mode) launches for the pairs
        node_pool = KarpenterNodePool(
            config.cluster.name,
            KarpenterNodePoolArgs.of_stack(config),
            pulumi.ResourceOptions(providers=[provider]),
            plan=plan,
        )
    declare_kubernetes(
        plan,
        cluster,
        secrets=secrets,
        provider=provider,
        verify_cluster=target,
        depends_on=[node_pool] if node_pool else [],
    )
    export("plan", plan_view(plan))
