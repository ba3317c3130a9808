"""What colo declares in the cluster, decided by the plan. Pure data, like NodePoolSpec for the node pool.

The components in colo.components translate this into Kubernetes objects and read nothing else: no stack
config reaches them.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.config.schema import IngressSource, Network, StackConfig
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
class SecretEnv:
    """A Pulumi secret every server reads from an environment variable, through a Kubernetes Secret."""

    stack_key: str  # colo:<stack_key>, the Pulumi secret the Kubernetes Secret is made from
    secret_name: str  # the Kubernetes Secret, which the pods refer to by name
    key: str  # its data key
    env: str  # the variable each server reads


# HF_TOKEN: huggingface_hub reads it for gated models. VLLM_API_KEY: vLLM's API server requires it as a
# bearer token on /v1 when --api-key is not given, in every release colo mirrors (0.10.1.1 to 0.34.0:
# vllm <version> vllm/entrypoints/openai/api_server.py::build_app, from 0.29
# vllm/entrypoints/serve/middleware/register.py, "args.api_key or [envs.VLLM_API_KEY]"). /health is not
# under /v1, so probes and the start gate need no key.
# The name of every server Service's one port: the API server's service proxy addresses it as <service>:http.
SERVICE_PORT_NAME = "http"
HF_TOKEN = SecretEnv("hfToken", "hf-token", "token", "HF_TOKEN")
VLLM_API_KEY = SecretEnv("vllmApiKey", "vllm-api-key", "token", "VLLM_API_KEY")


@dataclass(frozen=True)
class IngressPeer:
    """Pods allowed to reach the servers' ports: those with `pod_labels` (every pod when empty) in
    `namespace` (None: every namespace)."""

    namespace: str | None
    pod_labels: dict[str, str]


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
    device_plugin: DevicePluginPlan | None  # None: DRA, or someone else runs the plugin
    secret_env: tuple[SecretEnv, ...]  # the stack's secrets, as every server reads them
    ingress_from: tuple[IngressPeer, ...]  # who may call the servers (one NetworkPolicy per pair)
    scrape_from: tuple[IngressPeer, ...]  # where Prometheus runs: the servers' and the DCGM exporter's ports
    monitoring: MonitoringSpec  # scraping, GPU metrics, dashboard and alerts


def ingress_peer(namespace: str, source: IngressSource) -> IngressPeer:
    """One source as a peer; a source that names no namespace is in the servers' own, `namespace`."""
    return IngressPeer(
        None if source.namespace == "*" else source.namespace or namespace, dict(source.pod_labels or {})
    )


def allowed_sources(network: Network) -> list[IngressSource]:
    """network.allowFrom; without it, every pod of the servers' namespace."""
    return list(network.allow_from) if network.allow_from is not None else [IngressSource()]


def _peers(config: StackConfig, sources: list[IngressSource]) -> tuple[IngressPeer, ...]:
    return tuple(ingress_peer(config.cluster.namespace, source) for source in sources)


def ingress_peers(config: StackConfig) -> tuple[IngressPeer, ...]:
    return _peers(config, allowed_sources(config.network))


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
        secret_env=tuple(
            secret
            for secret, is_set in ((HF_TOKEN, config.hf_token_set), (VLLM_API_KEY, config.vllm_api_key_set))
            if is_set
        ),
        ingress_from=ingress_peers(config),
        scrape_from=_peers(config, config.network.scrape_from),
        monitoring=monitoring_spec(config, plan.pairs, plan.device_plugin),
    )
