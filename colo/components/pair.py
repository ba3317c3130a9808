"""The co-located pair: its servers share one GPU in a single-replica Deployment, with a Service per server.

The pair plans itself from its arguments (colo.components.pair_args), or takes its part of a stack plan made
once, before it registers anything. Start
order without sleeps: with native sidecars the earlier servers are restartable init containers with a
startup probe, so kubelet starts the LLM only once they are healthy; without them, each later server's
command first waits for the earlier servers' /health (colo/scripts/wait-for-health.sh).
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from colo.components.containers import (
    health_url,
    running_probe,
    server_env,
    server_mounts,
    shared_volumes,
    startup_probe,
    tolerations,
    weight_sync_container,
)
from colo.components.contract import (
    FIRST_RELEASED,
    GPU_CLAIM_WRAPPER,
    POD_SCRIPTS_WRAPPER,
    old_urn,
    renamed,
    token,
    unwrapped,
)
from colo.components.gpu_claim import gpu_claim_template, template_name_for
from colo.components.gpu_pairing import PairingContext, PodGpu, ServerGpu
from colo.components.labels import colo_labels, instance_selector, pair_labels_of, pair_selector_of
from colo.components.mps_daemon import pod_gpu
from colo.components.network_policy import ingress_policy, policy_peer
from colo.components.pair_args import ColocatedPairArgs, plan_colocated_pair, planned_pair
from colo.components.pod_scripts import script_path, scripts_config_map
from colo.components.pod_security import container_security_context, pod_security_context
from colo.components.verify_hook import after_rollout
from colo.config.schema import GpuPairing, IngressSource, Network
from colo.plan.capacity import pod_annotations
from colo.plan.figures import PairFigures
from colo.plan.kubernetes_spec import SERVICE_PORT_NAME, allowed_sources, ingress_peer
from colo.plan.pair import PairPlan
from colo.plan.server import Server
from colo.plan.stack import Plan

TYPE = token("ColocatedPair")  # an alias keeps the URNs of pairs deployed as colo:pair:CoLocatedPair
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


def _compile_cache(server: Server) -> str | None:
    """The server's compile-cache directory on the model volume, where the plan gave it one."""
    return server.compile_cache.sub_path if server.compile_cache is not None else None


def start_gate(earlier: list[Server]) -> list[str]:
    """Command prefix that waits for each earlier server, each within its own startup budget."""
    if not earlier:
        return []
    gate = ["bash", script_path("wait-for-health.sh")]
    for server in earlier:
        gate += ["--url", health_url(server), "--timeout", str(server.probe.startup_seconds)]
    return [*gate, "--"]


class ColocatedPair(pulumi.ComponentResource):
    """A co-located pair on one GPU: a single-replica Deployment, a Service per server, a NetworkPolicy.

    Planned before anything is registered (colo.components.pair_args): a pair that would not start raises a
    ProgramError, which the engine prints without a traceback, and the pair declares nothing. Once the
    Deployment has rolled out, the engine runs `colo verify` on it (colo.components.verify_hook) and
    warns where the servers' startup logs do not confirm the plan."""

    figures: PairFigures  # the plan, known as the program runs
    selector: dict[str, str]  # the labels that select the pair's pod
    deployment_name: pulumi.Output[str]
    service_names: dict[str, pulumi.Output[str]]  # by role
    utilizations: pulumi.Output[dict[str, float]]  # --gpu-memory-utilization by role
    kv_tokens: pulumi.Output[dict[str, int]]  # "GPU KV cache size" by role
    startup_probe_seconds: pulumi.Output[dict[str, int]]  # by role
    predicted_used_mib: pulumi.Output[int]  # nvidia-smi's memory.used with every server up
    predicted_free_mib: pulumi.Output[int]

    def __init__(
        self,
        name: str,
        args: ColocatedPairArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        plan: Plan | None = None,
    ) -> None:
        """`plan`: the stack plan this pair is one of, where the program planned its stack already (colo's own
        does); by default the pair plans itself from `args`. Either way nothing is planned twice."""
        # A refusal raises here, before the component or any child is registered.
        plan = plan if plan is not None else plan_colocated_pair(name, args)
        pair = planned_pair(plan, name, args)
        super().__init__(TYPE, name, None, renamed("ColocatedPair", opts))
        # What this pair's URN was under its first type: the parent of the wrappers it once declared.
        self._first_urn = old_urn(name, FIRST_RELEASED["ColocatedPair"], opts.parent if opts else None)
        self._args = args
        self._pair = pair
        self._native_sidecars = plan.native_sidecars
        self._node_selector = args.node_selector if args.node_selector is not None else plan.node_selector
        self._tolerations = list(plan.tolerations)
        self._capacity_annotations = pod_annotations(plan.config)  # Karpenter's do-not-disrupt, where it runs
        self._instance = plan.config.cluster.name
        self._labels = pair_labels_of(self._instance, name)
        self.selector = pair_selector_of(self._instance, name)
        self._gpu = self._pod_gpu(name, plan.config.cluster.gpu_pairing)
        self._scripts = self._pod_scripts(name)
        self.deployment_name = self._define_deployment(name).metadata.name
        self.service_names = {
            server.role: self._define_service(server).metadata.name for server in self._pair.servers
        }
        self._define_network_policy(name, plan.config.network)
        self._expose(PairFigures.of(self._pair))

    def _pod_gpu(self, name: str, method: GpuPairing) -> PodGpu:
        """How the servers reach their GPU (a tensor-parallel LLM's, their group); DRA's claim template is
        declared here where none was given, with a request per GPU of the pair."""
        template = self._args.claim_template
        if method == "dra" and template is None:
            gpus = self._pair.gpu_count
            template = gpu_claim_template(
                f"{name}-gpu-claim",
                namespace=self._args.namespace,
                labels=colo_labels(self._instance, "gpu-claim"),
                template_name=f"{name}-gpu" if gpus == 1 else f"{name}-{template_name_for(gpus)}",
                gpus=gpus,
                mps=self._pair.sharing is not None and self._pair.sharing.route == "dra driver",
                opts=self._unwrapped(f"{name}-gpu-claim", GPU_CLAIM_WRAPPER),
            ).metadata.name
        context = PairingContext(instance_selector(self._instance), template)
        return pod_gpu(method, self._pair, context)

    def _pod_scripts(self, name: str) -> pulumi.Input[str] | None:
        if self._args.scripts_config_map is not None:
            return self._args.scripts_config_map
        if not needs_pod_scripts(self._gpu, self._native_sidecars):
            return None
        return scripts_config_map(
            f"{name}-scripts",
            namespace=self._args.namespace,
            labels=colo_labels(self._instance, "pod-scripts"),
            config_map_name=f"{name}-scripts",
            opts=self._unwrapped(f"{name}-scripts", POD_SCRIPTS_WRAPPER),
        ).metadata.name

    def _unwrapped(self, name: str, wrapper: str) -> pulumi.ResourceOptions:
        """A child this pair once held inside a wrapper component of that name (contract.unwrapped)."""
        return pulumi.ResourceOptions.merge(
            pulumi.ResourceOptions(parent=self), unwrapped(name, wrapper, self._first_urn)
        )

    def _expose(self, figures: PairFigures) -> None:
        self.figures = figures
        servers = figures.by_role()
        self.utilizations = pulumi.Output.from_input(
            {role: s.gpu_memory_utilization for role, s in servers.items()}
        )
        self.kv_tokens = pulumi.Output.from_input({role: s.kv_tokens for role, s in servers.items()})
        self.startup_probe_seconds = pulumi.Output.from_input(
            {role: s.startup_probe_seconds for role, s in servers.items()}
        )
        self.predicted_used_mib = pulumi.Output.from_input(figures.predicted_used_mib)
        self.predicted_free_mib = pulumi.Output.from_input(figures.predicted_free_mib)
        self.register_outputs(
            {
                "deploymentName": self.deployment_name,
                "serviceNames": self.service_names,
                "utilizations": self.utilizations,
                "kvTokens": self.kv_tokens,
                "startupProbeSeconds": self.startup_probe_seconds,
                "predictedUsedMib": self.predicted_used_mib,
                "predictedFreeMib": self.predicted_free_mib,
            }
        )

    def _server_container(self, index: int, server: Server, gpu: ServerGpu) -> k8s.core.v1.ContainerArgs:
        pair, native = self._pair, self._native_sidecars
        gate = [] if native else start_gate(list(pair.servers[:index]))
        sidecar = native and server is not pair.llm
        return k8s.core.v1.ContainerArgs(
            name=server.role,
            image=server.image,
            image_pull_policy="IfNotPresent",
            command=[*gate, *gpu.command_prefix, *VLLM_SERVE],
            args=list(server.args),
            ports=[k8s.core.v1.ContainerPortArgs(name=server.role, container_port=server.port)],
            env=[
                *server_env(list(self._args.secrets), _compile_cache(server)),
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
            volume_mounts=[
                *server_mounts(
                    bool(gate) or gpu.uses_scripts,
                    shm=not gpu.shm_from_gpu,
                    compile_cache=_compile_cache(server),
                ),
                *gpu.mounts,
            ],
            restart_policy="Always" if sidecar else None,
        )

    def _pod_spec(self) -> k8s.core.v1.PodSpecArgs:
        pair, gpu = self._pair, self._gpu
        servers = [
            self._server_container(i, server, server_gpu)
            for i, (server, server_gpu) in enumerate(zip(pair.servers, gpu.servers, strict=True))
        ]
        sidecars, app = (servers[:-1], servers[-1:]) if self._native_sidecars else ([], servers)
        # Weights are copied before anything else runs. The copies request no GPU, so the UUID init
        # container still hands its device to the first server that asks (see gpu_pairing.uuid_handoff).
        syncs = [weight_sync_container(step) for step in pair.weight_syncs]
        account = pair.service_account
        caches = any(_compile_cache(server) for server in pair.servers)
        volumes = shared_volumes(self._args.model_claim, self._scripts, models_writable=bool(syncs) or caches)
        return k8s.core.v1.PodSpecArgs(
            init_containers=[*syncs, *gpu.init_containers, *sidecars] or None,
            containers=app,
            volumes=[*volumes, *gpu.volumes],
            resource_claims=gpu.resource_claims or None,
            affinity=gpu.affinity,
            share_process_namespace=gpu.share_process_namespace or None,
            node_selector=self._node_selector,
            tolerations=tolerations(self._tolerations),
            security_context=pod_security_context(),
            service_account_name=account,
            # No pod needs the Kubernetes API; one that copies from S3 needs the token for AWS credentials.
            automount_service_account_token=account is not None,
            # Service links put <NAME>_PORT variables in the environment; vLLM reads VLLM_PORT.
            enable_service_links=False,
        )

    def _define_deployment(self, name: str) -> k8s.apps.v1.Deployment:
        pair = self._pair
        timeout = f"{pair.rollout_seconds}s"
        return k8s.apps.v1.Deployment(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=pair.name,
                namespace=self._args.namespace,
                labels=self._labels,
                annotations=scanner_exceptions(pair, bool(self._args.secrets)),
            ),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=1,
                # The new pod needs the GPU the old one holds: a rolling update would wait for it forever.
                strategy=k8s.apps.v1.DeploymentStrategyArgs(type="Recreate"),
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=self.selector),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        labels={**self._labels, **self.selector},
                        annotations={**self._capacity_annotations, **(self._args.pod_annotations or {})}
                        or None,
                    ),
                    spec=self._pod_spec(),
                ),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                delete_before_replace=True,
                custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout),
                hooks=after_rollout(pair, self.selector, self._args.verify_cluster),
            ),
        )

    def _define_service(self, server: Server) -> k8s.core.v1.Service:
        return k8s.core.v1.Service(
            server.name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=server.name, namespace=self._args.namespace, labels=self._labels
            ),
            spec=k8s.core.v1.ServiceSpecArgs(
                selector=self.selector,
                ports=[
                    k8s.core.v1.ServicePortArgs(
                        name=SERVICE_PORT_NAME, port=server.port, target_port=server.port
                    )
                ],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _define_network_policy(self, name: str, network: Network) -> None:
        """Admits network.allowFrom and scrapeFrom to the servers' ports; a source naming no namespace is
        in the pair's own, whose name is known once `namespace` resolves."""
        namespace = pulumi.Output.from_input(self._args.namespace)

        def peer(source: IngressSource) -> pulumi.Output[k8s.networking.v1.NetworkPolicyPeerArgs]:
            return namespace.apply(lambda own: policy_peer(ingress_peer(own, source), own))

        sources = [peer(source) for source in (*allowed_sources(network), *network.scrape_from)]
        ingress_policy(
            name,
            namespace=self._args.namespace,
            labels=self._labels,
            selector=self.selector,
            ports=[server.port for server in self._pair.servers],
            sources=sources,
            opts=pulumi.ResourceOptions(parent=self),
        )


def needs_pod_scripts(gpu: PodGpu, native_sidecars: bool) -> bool:
    """colo's scripts run in the pod: the GPU pairing's, or the start gate where there are no native sidecars."""
    return gpu.uses_scripts or not native_sidecars
