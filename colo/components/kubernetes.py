"""Everything a stack puts in the cluster, in dependency order: namespace, secrets, GPU sharing, volume, pairs."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from colo.components.containers import SecretRef
from colo.components.contract import (
    GPU_CLAIM_WRAPPER,
    NAMESPACE_WRAPPER,
    POD_SCRIPTS_WRAPPER,
    SECRET_WRAPPERS,
    unwrapped,
)
from colo.components.dcgm_exporter import DcgmExporter, DcgmExporterArgs
from colo.components.device_plugin import DevicePluginArgs, NvidiaDevicePlugin
from colo.components.gpu_claim import gpu_claim_template
from colo.components.gpu_pairing import PairingContext
from colo.components.labels import pairs_selector, standard_labels
from colo.components.model_store import ModelStore, ModelStoreArgs
from colo.components.monitoring import ServerMonitoring, ServerMonitoringArgs, scrape_annotations
from colo.components.mps_daemon import pod_gpu
from colo.components.namespace import servers_namespace
from colo.components.network_policy import policy_peer
from colo.components.pair import ColocatedPair, needs_pod_scripts
from colo.components.pair_args import ColocatedPairArgs
from colo.components.pod_scripts import scripts_config_map
from colo.components.pod_security import SERVERS_LEVEL
from colo.components.secrets import stack_secret
from colo.config import Pair, StackConfig
from colo.config.cluster_target import ClusterTarget
from colo.plan.kubernetes_spec import KubernetesSpec
from colo.plan.stack import Plan


def declare_kubernetes(
    plan: Plan,
    spec: KubernetesSpec,
    *,
    secrets: dict[str, pulumi.Output[str]],
    provider: k8s.Provider,
    verify_cluster: ClusterTarget,
    depends_on: list[pulumi.Resource],
) -> None:
    """`spec` is the stack plan's (colo.plan.kubernetes_spec); each pair is declared with its part of `plan` and
    the stack's pieces. `secrets`: the stack's Pulumi secrets by key (colo:hfToken -> "hfToken"), for spec.secret_env.
    Every object goes through `provider` (the stack's cluster); the pairs' after-rollout check reads
    `verify_cluster`, the same cluster."""
    config = plan.config
    opts = pulumi.ResourceOptions(depends_on=depends_on, providers=[provider])
    # The objects declared here directly, each once inside a wrapper component of its own (contract.unwrapped).
    own = pulumi.ResourceOptions(depends_on=depends_on, provider=provider)
    ns = servers_namespace(
        "namespace",
        namespace=spec.namespace,
        labels=standard_labels(spec, "namespace"),
        pod_security=SERVERS_LEVEL,
        kubernetes_version=spec.kubernetes_version,
        opts=pulumi.ResourceOptions.merge(own, unwrapped("namespace", NAMESPACE_WRAPPER, None)),
    ).metadata.name

    secret_refs = [
        SecretRef(
            env.env,
            stack_secret(
                env.secret_name,
                namespace=ns,
                key=env.key,
                value=secrets[env.stack_key],
                labels=standard_labels(spec, env.secret_name),
                opts=pulumi.ResourceOptions.merge(
                    own, unwrapped(env.secret_name, SECRET_WRAPPERS[env.secret_name], None)
                ),
            ).metadata.name,  # an output: whatever refers to the Secret waits for it
            env.key,
        )
        for env in spec.secret_env
    ]

    plugin = None
    if spec.device_plugin is not None:
        plugin = NvidiaDevicePlugin(
            "nvidia-device-plugin",
            DevicePluginArgs(
                namespace=spec.device_plugin.namespace,
                kubernetes_version=spec.kubernetes_version,
                node_selector=spec.device_plugin.node_selector,
                tolerations=list(spec.tolerations),
                time_slices=spec.device_plugin.time_slices,
                labels=standard_labels(spec, "device-plugin"),
            ),
            opts,
        )

    # dra: one template per size of pair, the single-GPU one as it always was, one of N requests per group size
    claim_templates: dict[int, pulumi.Output[str]] = {}
    if spec.gpu_pairing == "dra":
        for gpus in sorted({pair.gpu_count for pair in spec.pairs}):
            name = "gpu-claim" if gpus == 1 else f"gpu-claim-{gpus}"
            claim_templates[gpus] = gpu_claim_template(
                name,
                namespace=ns,
                labels=standard_labels(spec, "gpu-claim"),
                gpus=gpus,
                mps=config.cluster.compute_sharing == "mps",
                opts=pulumi.ResourceOptions.merge(own, unwrapped(name, GPU_CLAIM_WRAPPER, None)),
            ).metadata.name

    volume = config.storage
    store = ModelStore(
        "model-store",
        ModelStoreArgs(
            namespace=ns,
            storage_class=volume.storage_class,
            size=volume.size,
            access_mode=volume.access_mode,
            labels=standard_labels(spec, "model-store"),
        ),
        opts,
    )

    # One scripts ConfigMap for every pair that runs colo's scripts, rather than one each.
    def context(gpus: int) -> PairingContext:
        return PairingContext(pairs_selector(spec), claim_templates.get(gpus))

    scripts = None
    if any(
        needs_pod_scripts(pod_gpu(spec.gpu_pairing, pair, context(pair.gpu_count)), spec.native_sidecars)
        for pair in spec.pairs
    ):
        scripts = scripts_config_map(
            "pod-scripts",
            namespace=ns,
            labels=standard_labels(spec, "pod-scripts"),
            opts=pulumi.ResourceOptions.merge(own, unwrapped("pod-scripts", POD_SCRIPTS_WRAPPER, None)),
        ).metadata.name

    for pair in config.pairs:
        references = PairReferences(
            namespace=ns,
            model_claim=store.claim_name,
            secrets=secret_refs,
            pod_annotations=scrape_annotations(spec.monitoring),
            scripts_config_map=scripts,
            claim_template=claim_templates.get(pair.tensor_parallel_size),
            verify_cluster=verify_cluster,
        )
        ColocatedPair(pair.name, stack_pair_args(config, pair, references), opts, plan=plan)
    declare_monitoring(spec, ns, opts, plugin)


@dataclass(frozen=True)
class PairReferences:
    """What a stack's pairs share in the cluster, declared once for them all."""

    namespace: pulumi.Input[str]
    model_claim: pulumi.Input[str]
    secrets: list[SecretRef]
    pod_annotations: dict[str, str] | None = None
    scripts_config_map: pulumi.Input[str] | None = None
    claim_template: pulumi.Input[str] | None = None
    verify_cluster: ClusterTarget | None = None


def stack_pair_args(config: StackConfig, pair: Pair, references: PairReferences) -> ColocatedPairArgs:
    """One of the stack's pairs as ColocatedPair's arguments: its servers and the stack's pieces."""
    return ColocatedPairArgs(
        llm=pair.llm,
        embedding=pair.embedding,
        reranker=pair.reranker,
        rank_balance=pair.rank_balance if "rank_balance" in pair.model_fields_set else None,
        namespace=references.namespace,
        model_claim=references.model_claim,
        cluster=config.cluster,
        node_pool=config.node_pool,
        storage=config.storage,
        budget=config.budget,
        network=config.network,
        secrets=references.secrets,
        pod_annotations=references.pod_annotations,
        scripts_config_map=references.scripts_config_map,
        claim_template=references.claim_template,
        verify_cluster=references.verify_cluster,
        hub_token=config.hub_token.get_secret_value() if config.hub_token else None,
        aws_region=config.aws_region,
        project_dir=config.project_dir,
    )


def declare_monitoring(
    spec: KubernetesSpec,
    namespace: pulumi.Output[str],
    opts: pulumi.ResourceOptions,
    plugin: NvidiaDevicePlugin | None,
) -> None:
    """Scraping, alerts and dashboard of the servers; the DCGM exporter beside colo's device plugin."""
    monitoring = spec.monitoring
    if monitoring.prometheus_operator or monitoring.dashboard_namespace is not None:
        ServerMonitoring(
            "monitoring",
            ServerMonitoringArgs(
                spec=monitoring,
                instance=spec.instance,
                namespace=namespace,
                namespace_name=spec.namespace,
                pod_selector=pairs_selector(spec),
                labels=standard_labels(spec, "monitoring"),
            ),
            opts,
        )
    if monitoring.dcgm_exporter is not None and plugin is not None:
        DcgmExporter(
            "dcgm-exporter",
            DcgmExporterArgs(
                plan=monitoring.dcgm_exporter,
                tolerations=list(spec.tolerations),
                labels=standard_labels(spec, "dcgm-exporter"),
                scrape_annotations=scrape_annotations(monitoring),
                pod_monitor_labels=monitoring.monitor_labels if monitoring.prometheus_operator else None,
                scrape_from=[
                    policy_peer(peer, monitoring.dcgm_exporter.namespace) for peer in spec.scrape_from
                ],
            ),
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[plugin])),
        )
