"""`colo verify` inside `pulumi up`: after a pair's Deployment is created or updated, hold the plan against what
its servers logged at startup, and say so in the engine's output.

A Pulumi resource hook (the Python SDK's `ResourceHook`, run by the engine once the Kubernetes provider has
awaited the rollout) reads each server's log through the Kubernetes API, as `colo verify --stack` does, and
logs the comparison on the Deployment. A plan that was wrong, or a log that cannot be read, makes the hook
fail; it is registered with `ignore_errors`, so the engine reports that as a warning and the update stands.
No hook is bound where there is no cluster to read: when the provider writes manifests to a directory
instead (as under `colo render`). The engine runs resource hooks from Pulumi v3.182.0; an older CLI is
refused by the SDK with "The Pulumi CLI does not support resource hooks. Please update the Pulumi CLI."
The logs are read from the cluster the pair's provider deploys to (ColocatedPairArgs.verify_cluster),
with the same settings.
"""

from __future__ import annotations

from pathlib import Path

import pulumi
import yaml

from colo.cluster.access import ClusterAccess, cluster_access
from colo.config.cluster_target import ClusterTarget
from colo.plan.pair import PairPlan


class PlanNotConfirmed(Exception):
    """What the servers logged does not confirm the plan, or could not be read: the hook's failure."""


def hooks_apply() -> bool:
    return not pulumi.Config("kubernetes").get("renderYamlToDirectory")


def stack_config_access() -> ClusterAccess:
    """Where a pair declared without a named cluster is verified: the `kubernetes:` settings of the stack
    config, as the default provider reads them. A kubeconfig given as contents is read as data, never
    written to a file."""
    provider = pulumi.Config("kubernetes")
    setting, context = provider.get("kubeconfig"), provider.get("context")
    if setting is None or Path(setting).expanduser().is_file():
        return ClusterAccess(setting, context)
    contents = yaml.safe_load(setting)
    if not isinstance(contents, dict):
        raise PlanNotConfirmed("colo verify: kubernetes:kubeconfig is neither a file nor a kubeconfig")
    return ClusterAccess(contents, context)


def deployed_namespace(args: pulumi.ResourceHookArgs) -> str:
    """The namespace the engine reports the Deployment in: known here even where the program passed an Output."""
    metadata = (args.new_outputs or {}).get("metadata") or {}
    namespace = metadata.get("namespace")
    if not isinstance(namespace, str):
        raise PlanNotConfirmed(f"colo verify: the engine reported no namespace for {args.name}")
    return namespace


def verify_pair(namespace: str, selector: dict[str, str], pair: PairPlan, access: ClusterAccess) -> str:
    """The comparison for one pair, as `colo verify` prints it; raises PlanNotConfirmed unless within."""
    from colo.verify.check import check_readings
    from colo.verify.cluster import ClusterReader, ClusterUnreachable, ServerTarget
    from colo.verify.compare import Verdict, overall
    from colo.verify.report import render_text

    try:
        reader = ClusterReader(access.kubeconfig, access.context)
        readings = [
            reader.read(
                ServerTarget(pair.name, server.role, namespace, selector, server.name),
                previous=False,
            )
            for server in pair.servers
        ]
    except ClusterUnreachable as unreachable:
        raise PlanNotConfirmed(f"colo verify {pair.name}: nothing could be read: {unreachable}") from None
    planned = {server.name: (server, index == 0) for index, server in enumerate(pair.servers)}
    checks, _ = check_readings(readings, planned, [pair])
    text = render_text(pulumi.get_stack(), checks, markdown=False)
    if overall(checks) is not Verdict.WITHIN:
        raise PlanNotConfirmed(text)
    return text


def after_rollout(
    pair: PairPlan, selector: dict[str, str], cluster: ClusterTarget | None = None
) -> pulumi.ResourceHookBinding | None:
    """The hooks for a pair's Deployment (its pod selected by `selector`) in `cluster` (None: the stack
    config's kubernetes: settings), or None where none can run."""
    if not hooks_apply():
        return None

    def verify(args: pulumi.ResourceHookArgs) -> None:
        # boto3 (a fifth of a second to import) only where a hook runs: never under colo render
        from colo.aws.clients import client

        access = cluster_access(cluster, client) if cluster is not None else stack_config_access()
        text = verify_pair(deployed_namespace(args), selector, pair, access)
        pulumi.log.info(text)

    hook = pulumi.ResourceHook(
        f"colo-verify-{pair.name}", verify, opts=pulumi.ResourceHookOptions(ignore_errors=True)
    )
    return pulumi.ResourceHookBinding(after_create=[hook], after_update=[hook])
