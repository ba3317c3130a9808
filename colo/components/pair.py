"""One co-located pair: a single-replica Deployment whose servers share one GPU, and a Service per server.

Start order without sleeps: with native sidecars the earlier servers are restartable init containers with
a startup probe, so kubelet starts the LLM only once they are healthy; without them, each later server's
command first waits for the earlier servers' /health (colo/scripts/wait-for-health.sh).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from colo.components.containers import (
    SecretRef,
    health_url,
    running_probe,
    server_env,
    server_mounts,
    shared_volumes,
    startup_probe,
    tolerations,
    weight_sync_container,
)
from colo.components.gpu_pairing import PodGpu, ServerGpu
from colo.components.network_policy import ingress_policy
from colo.components.pod_scripts import script_path
from colo.components.pod_security import container_security_context, pod_security_context
from colo.plan.kubernetes_spec import SERVICE_PORT_NAME
from colo.plan.pair import PairPlan
from colo.plan.server import Server

VLLM_SERVE = ["vllm", "serve"]
# Policy-scanner findings a pod can carry for a reason, each explained in docs/checkov.md: a pod that
# reads S3 needs its service account's token (IRSA, EKS Pod Identity); vLLM reads its API key only from
# the environment (or its command line), and the HF token travels the same way.
SERVICE_ACCOUNT_TOKEN_EXCEPTION = "CKV_K8S_38=the weight sync reads S3 with the service account's token"
SECRET_ENV_EXCEPTION = "CKV_K8S_35=vLLM reads VLLM_API_KEY and HF_TOKEN from the environment only"


def scanner_exceptions(pair: PairPlan, reads_secrets: bool) -> dict[str, str] | None:
    found = [
        exception
        for exception, applies in (
            (SERVICE_ACCOUNT_TOKEN_EXCEPTION, pair.service_account is not None),
            (SECRET_ENV_EXCEPTION, reads_secrets),
        )
        if applies
    ]
    return {f"checkov.io/skip{i}": exception for i, exception in enumerate(found, start=1)} or None


@dataclass(frozen=True)
class CoLocatedPairArgs:
    pair: PairPlan
    gpu: PodGpu
    native_sidecars: bool
    namespace: pulumi.Input[str]
    labels: dict[str, str]
    selector: dict[str, str]
    node_selector: dict[str, str]
    tolerations: list[dict[str, str]]
    model_claim: pulumi.Input[str]
    scripts_config_map: pulumi.Input[str] | None
    secrets: list[SecretRef]  # what every server reads from a Secret (HF_TOKEN, VLLM_API_KEY)
    ingress_from: list[k8s.networking.v1.NetworkPolicyPeerArgs]  # who may call the servers
    pod_annotations: dict[str, str] | None = (
        None  # Prometheus scrape annotations (colo.components.monitoring)
    )
    deployment_hooks: pulumi.ResourceHookBinding | None = None  # colo.components.verify_hook


def start_gate(earlier: list[Server]) -> list[str]:
    """Command prefix that waits for each earlier server, each within its own startup budget."""
    if not earlier:
        return []
    gate = ["bash", script_path("wait-for-health.sh")]
    for server in earlier:
        gate += ["--url", health_url(server), "--timeout", str(server.probe.startup_seconds)]
    return [*gate, "--"]


class CoLocatedPair(pulumi.ComponentResource):
    deployment_name: pulumi.Output[str]
    service_names: dict[str, pulumi.Output[str]]

    def __init__(
        self, name: str, args: CoLocatedPairArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("colo:pair:CoLocatedPair", name, None, opts)
        self._args = args
        deployment = self._define_deployment(name)
        self.deployment_name = deployment.metadata.name
        self.service_names = {
            server.role: self._define_service(server).metadata.name for server in args.pair.servers
        }
        ingress_policy(
            args.pair.name,
            namespace=args.namespace,
            labels=args.labels,
            selector=args.selector,
            ports=[server.port for server in args.pair.servers],
            sources=args.ingress_from,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"deployment_name": self.deployment_name, "service_names": self.service_names})

    def _server_container(self, index: int, server: Server, gpu: ServerGpu) -> k8s.core.v1.ContainerArgs:
        args = self._args
        gate = [] if args.native_sidecars else start_gate(list(args.pair.servers[:index]))
        sidecar = args.native_sidecars and server is not args.pair.llm
        return k8s.core.v1.ContainerArgs(
            name=server.role,
            image=server.image,
            image_pull_policy="IfNotPresent",
            command=[*gate, *gpu.command_prefix, *VLLM_SERVE],
            args=list(server.args),
            ports=[k8s.core.v1.ContainerPortArgs(name=server.role, container_port=server.port)],
            env=[
                *server_env(args.secrets),
                *gpu.env,
                *(k8s.core.v1.EnvVarArgs(name=name, value=value) for name, value in server.env),
            ],
            resources=k8s.core.v1.ResourceRequirementsArgs(
                requests={"cpu": server.cpu, "memory": server.memory, **gpu.limits},
                limits={"memory": server.memory, **gpu.limits},
                claims=gpu.claims or None,
            ),
            startup_probe=startup_probe(server),
            readiness_probe=running_probe(server),
            liveness_probe=running_probe(server),
            security_context=container_security_context(),
            volume_mounts=[*server_mounts(bool(gate) or gpu.uses_scripts), *gpu.mounts],
            restart_policy="Always" if sidecar else None,
        )

    def _pod_spec(self) -> k8s.core.v1.PodSpecArgs:
        args = self._args
        servers = [
            self._server_container(i, server, gpu)
            for i, (server, gpu) in enumerate(zip(args.pair.servers, args.gpu.servers, strict=True))
        ]
        sidecars, app = (servers[:-1], servers[-1:]) if args.native_sidecars else ([], servers)
        # Weights are copied before anything else runs. The copies request no GPU, so the UUID init
        # container still hands its device to the first server that asks (see gpu_pairing.uuid_handoff).
        syncs = [weight_sync_container(step) for step in args.pair.weight_syncs]
        account = args.pair.service_account
        volumes = shared_volumes(args.model_claim, args.scripts_config_map, models_writable=bool(syncs))
        return k8s.core.v1.PodSpecArgs(
            init_containers=[*syncs, *args.gpu.init_containers, *sidecars] or None,
            containers=app,
            volumes=[*volumes, *args.gpu.volumes],
            resource_claims=args.gpu.resource_claims or None,
            affinity=args.gpu.affinity,
            node_selector=args.node_selector,
            tolerations=tolerations(args.tolerations),
            security_context=pod_security_context(),
            service_account_name=account,
            # No pod needs the Kubernetes API; one that copies from S3 needs the token for AWS credentials.
            automount_service_account_token=account is not None,
            # Service links put <NAME>_PORT variables in the environment; vLLM reads VLLM_PORT.
            enable_service_links=False,
        )

    def _define_deployment(self, name: str) -> k8s.apps.v1.Deployment:
        args = self._args
        timeout = f"{args.pair.rollout_seconds}s"
        return k8s.apps.v1.Deployment(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.pair.name,
                namespace=args.namespace,
                labels=args.labels,
                annotations=scanner_exceptions(args.pair, bool(args.secrets)),
            ),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=1,
                # The new pod needs the GPU the old one holds: a rolling update would wait for it forever.
                strategy=k8s.apps.v1.DeploymentStrategyArgs(type="Recreate"),
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=args.selector),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        labels={**args.labels, **args.selector}, annotations=args.pod_annotations
                    ),
                    spec=self._pod_spec(),
                ),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                delete_before_replace=True,
                custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout),
                hooks=args.deployment_hooks,
            ),
        )

    def _define_service(self, server: Server) -> k8s.core.v1.Service:
        args = self._args
        return k8s.core.v1.Service(
            server.name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=server.name, namespace=args.namespace, labels=args.labels
            ),
            spec=k8s.core.v1.ServiceSpecArgs(
                selector=args.selector,
                ports=[
                    k8s.core.v1.ServicePortArgs(
                        name=SERVICE_PORT_NAME, port=server.port, target_port=server.port
                    )
                ],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
