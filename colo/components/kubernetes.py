"""Everything colo puts in the cluster, in dependency order: namespace, token, GPU sharing, volume, pairs."""

from __future__ import annotations

import pulumi

from colo.components.device_plugin import DevicePluginArgs, NvidiaDevicePlugin
from colo.components.gpu_claim import GpuClaimTemplate, GpuClaimTemplateArgs
from colo.components.gpu_pairing import PAIRING, PairingContext
from colo.components.hf_token import TOKEN_KEY, HfTokenSecret, HfTokenSecretArgs
from colo.components.labels import pair_labels, pair_selector, pairs_selector, standard_labels
from colo.components.model_store import ModelStore, ModelStoreArgs
from colo.components.namespace import Namespace, NamespaceArgs
from colo.components.pair import CoLocatedPair, CoLocatedPairArgs
from colo.components.pod_scripts import PodScripts, PodScriptsArgs
from colo.config.schema import StackConfig
from colo.plan.stack import Plan


def declare_kubernetes(
    config: StackConfig,
    plan: Plan,
    *,
    hf_token: pulumi.Output[str] | None,
    depends_on: list[pulumi.Resource],
) -> None:
    cluster = config.cluster
    opts = pulumi.ResourceOptions(depends_on=depends_on)
    namespace = Namespace(
        "namespace",
        NamespaceArgs(
            name=cluster.namespace,
            labels=standard_labels(config, "namespace"),
            # No pairing method needs privilege in the servers' pods (see colo.components.containers).
            pod_security="restricted",
            kubernetes_version=cluster.kubernetes_version,
        ),
        opts,
    )
    ns = namespace.name

    secret = None
    if hf_token is not None:
        secret = HfTokenSecret(
            "hf-token", HfTokenSecretArgs(ns, hf_token, standard_labels(config, "hf-token")), opts
        )

    if plan.device_plugin is not None:
        NvidiaDevicePlugin(
            "nvidia-device-plugin",
            DevicePluginArgs(
                namespace=plan.device_plugin.namespace,
                kubernetes_version=cluster.kubernetes_version,
                node_selector=plan.device_plugin.node_selector,
                tolerations=list(plan.tolerations),
                time_slices=plan.device_plugin.time_slices,
                labels=standard_labels(config, "device-plugin"),
            ),
            opts,
        )

    claim_template = None
    if cluster.gpu_pairing == "dra":
        claim_template = GpuClaimTemplate(
            "gpu-claim", GpuClaimTemplateArgs(ns, standard_labels(config, "gpu-claim")), opts
        ).template_name

    store = ModelStore(
        "model-store",
        ModelStoreArgs(
            namespace=ns,
            storage_class=config.storage.storage_class,
            size=config.storage.size,
            access_mode=config.storage.access_mode,
            labels=standard_labels(config, "model-store"),
        ),
        opts,
    )

    pairing = PAIRING[cluster.gpu_pairing]
    context = PairingContext(pairs_selector(config), claim_template)
    shapes = {pair.name: pairing(pair, context) for pair in plan.pairs}
    scripts = None
    if not plan.native_sidecars or any(shape.uses_scripts for shape in shapes.values()):
        scripts = PodScripts("pod-scripts", PodScriptsArgs(ns, standard_labels(config, "pod-scripts")), opts)

    for pair in plan.pairs:
        CoLocatedPair(
            pair.name,
            CoLocatedPairArgs(
                pair=pair,
                gpu=shapes[pair.name],
                native_sidecars=plan.native_sidecars,
                namespace=ns,
                labels=pair_labels(config, pair.name),
                selector=pair_selector(config, pair.name),
                node_selector=plan.node_selector,
                tolerations=list(plan.tolerations),
                model_claim=store.claim_name,
                scripts_config_map=scripts.config_map_name if scripts else None,
                hf_secret=secret.secret_name if secret else None,
                hf_secret_key=TOKEN_KEY,
            ),
            opts,
        )
