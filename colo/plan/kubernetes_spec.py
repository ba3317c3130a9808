"""What colo declares in the cluster, decided by the plan. Pure data, like NodePoolSpec for the node pool.

The components in colo.components translate this into Kubernetes objects and read nothing else: no stack
config reaches them.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.config.schema import StackConfig
from colo.plan.monitoring import MonitoringSpec, monitoring_spec
from colo.plan.pair import PairPlan
from colo.plan.scheduling import DevicePluginPlan
from colo.plan.stack import Plan


@dataclass(frozen=True)
class ModelVolumeSpec:
    storage_class: str
    size: str
    access_mode: str


@dataclass(frozen=True)
class KubernetesSpec:
    instance: str  # the stack's cluster name: app.kubernetes.io/instance of every object colo declares
    namespace: str  # where the servers run
    kubernetes_version: str  # the Pod Security policy version every namespace pins
    gpu_pairing: str  # how the servers of a pod reach one GPU (cluster.gpuPairing)
    native_sidecars: bool  # earlier servers run as restartable init containers
    model_volume: ModelVolumeSpec
    pairs: tuple[PairPlan, ...]
    node_selector: dict[str, str]  # what every GPU pod selects
    tolerations: tuple[dict[str, str], ...]  # what every GPU pod tolerates
    device_plugin: DevicePluginPlan | None  # None: DRA, or the node image brings its own plugin
    monitoring: MonitoringSpec  # scraping, GPU metrics, dashboard and alerts


def kubernetes_spec(config: StackConfig, plan: Plan) -> KubernetesSpec:
    cluster, storage = config.cluster, config.storage
    return KubernetesSpec(
        instance=cluster.name,
        namespace=cluster.namespace,
        kubernetes_version=cluster.kubernetes_version,
        gpu_pairing=cluster.gpu_pairing,
        native_sidecars=plan.native_sidecars,
        model_volume=ModelVolumeSpec(storage.storage_class, storage.size, storage.access_mode),
        pairs=plan.pairs,
        node_selector=plan.node_selector,
        tolerations=plan.tolerations,
        device_plugin=plan.device_plugin,
        monitoring=monitoring_spec(config, plan),
    )
