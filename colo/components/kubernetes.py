"""Everything colo puts in the cluster, in dependency order: namespace, secrets, GPU sharing, volume, pairs."""

from __future__ import annotations

import pulumi

from colo.components.containers import SecretRef
from colo.components.dcgm_exporter import DcgmExporter, DcgmExporterArgs
from colo.components.device_plugin import DevicePluginArgs, NvidiaDevicePlugin
from colo.components.gpu_claim import GpuClaimTemplate, GpuClaimTemplateArgs
from colo.components.gpu_pairing import PAIRING, PairingContext
from colo.components.labels import pair_labels, pair_selector, pairs_selector, standard_labels
from colo.components.model_store import ModelStore, ModelStoreArgs
from colo.components.monitoring import ServerMonitoring, ServerMonitoringArgs, scrape_annotations
from colo.components.namespace import Namespace, NamespaceArgs
from colo.components.network_policy import policy_peer
from colo.components.pair import CoLocatedPair, CoLocatedPairArgs
from colo.components.pod_scripts import PodScripts, PodScriptsArgs
from colo.components.pod_security import SERVERS_LEVEL
from colo.components.secrets import StackSecretArgs, declare_secret
from colo.components.verify_hook import after_rollout
from colo.plan.kubernetes_spec import KubernetesSpec


def declare_kubernetes(
    spec: KubernetesSpec,
    *,
    secrets: dict[str, pulumi.Output[str]],
    depends_on: list[pulumi.Resource],
) -> None:
    """`secrets`: the stack's Pulumi secrets by key (colo:hfToken -> "hfToken"), for spec.secret_env."""
    opts = pulumi.ResourceOptions(depends_on=depends_on)
    namespace = Namespace(
        "namespace",
        NamespaceArgs(
            name=spec.namespace,
            labels=standard_labels(spec, "namespace"),
            pod_security=SERVERS_LEVEL,
            kubernetes_version=spec.kubernetes_version,
        ),
        opts,
    )
    ns = namespace.name

    secret_refs = [
        SecretRef(
            env.env,
            declare_secret(
                StackSecretArgs(
                    ns,
                    env.secret_name,
                    env.key,
                    secrets[env.stack_key],
                    standard_labels(spec, env.secret_name),
                ),
                opts,
            ),
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

    claim_template = None
    if spec.gpu_pairing == "dra":
        claim_template = GpuClaimTemplate(
            "gpu-claim", GpuClaimTemplateArgs(ns, standard_labels(spec, "gpu-claim")), opts
        ).template_name

    volume = spec.model_volume
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

    pairing = PAIRING[spec.gpu_pairing]
    context = PairingContext(pairs_selector(spec), claim_template)
    shapes = {pair.name: pairing(pair, context) for pair in spec.pairs}
    scripts = None
    if not spec.native_sidecars or any(shape.uses_scripts for shape in shapes.values()):
        scripts = PodScripts("pod-scripts", PodScriptsArgs(ns, standard_labels(spec, "pod-scripts")), opts)

    for pair in spec.pairs:
        CoLocatedPair(
            pair.name,
            CoLocatedPairArgs(
                pair=pair,
                gpu=shapes[pair.name],
                native_sidecars=spec.native_sidecars,
                namespace=ns,
                labels=pair_labels(spec, pair.name),
                selector=pair_selector(spec, pair.name),
                node_selector=spec.node_selector,
                tolerations=list(spec.tolerations),
                model_claim=store.claim_name,
                scripts_config_map=scripts.config_map_name if scripts else None,
                secrets=secret_refs,
                ingress_from=[
                    policy_peer(peer, spec.namespace) for peer in (*spec.ingress_from, *spec.scrape_from)
                ],
                pod_annotations=scrape_annotations(spec.monitoring),
                deployment_hooks=after_rollout(spec, pair),
            ),
            opts,
        )
    declare_monitoring(spec, ns, opts, plugin)


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
