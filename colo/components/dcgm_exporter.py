"""NVIDIA's DCGM exporter on colo's GPU nodes: GPU memory used per GPU, attributed to the pods holding it.

Declared only where colo installs the device plugin (the GPU operator runs its own exporter). It mirrors the
upstream manifest (NVIDIA/dcgm-exporter dcgm-exporter.yaml at tag 4.5.3-4.8.2) with these choices: a counters
file of its own with the memory, utilisation and health fields only, so no profiling (DCGM_FI_PROF_*) field
needs CAP_SYS_ADMIN and every capability is dropped; it runs as root because kubelet's pod-resources socket
(which maps GPUs to pods) is root-only; a read-only root filesystem with an emptyDir for /tmp; and it lives in
the device plugin's privileged namespace, the only one colo allows a hostPath in.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from colo.components.containers import tolerations
from colo.components.contract import renamed, token
from colo.components.network_policy import ingress_policy
from colo.components.pod_security import container_security_context, pod_security_context
from colo.plan.monitoring import DcgmExporterPlan

IMAGE = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless"
PORT = 9400
COUNTERS_DIR = "/etc/dcgm-exporter/colo"
COUNTERS_FILE = "counters.csv"
# A subset of the exporter's default-counters.csv (same tag): no DCGM_FI_PROF_* field, which needs SYS_ADMIN.
COUNTERS = """\
# DCGM field, Prometheus metric type, help message (NVIDIA/dcgm-exporter etc/default-counters.csv)
DCGM_FI_DEV_FB_FREE, gauge, Framebuffer memory free (in MiB).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).
DCGM_FI_DEV_FB_RESERVED, gauge, Framebuffer memory reserved (in MiB).
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).
DCGM_FI_DEV_MEM_COPY_UTIL, gauge, Memory utilization (in %).
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).
DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.
DCGM_FI_DRIVER_VERSION, label, Driver Version
"""
# Policy-scanner findings inherent to the exporter (docs/checkov.md explains each).
SCANNER_EXCEPTIONS = {
    "checkov.io/skip1": "CKV_K8S_23=reads kubelet's root-only pod-resources socket to attribute GPUs to pods",
    "checkov.io/skip2": "CKV_K8S_40=runs as root for the same reason; no UID choice applies",
}
CPU_REQUEST, MEMORY_REQUEST, MEMORY_LIMIT = "100m", "128Mi", "512Mi"


@dataclass(frozen=True)
class DcgmExporterArgs:
    plan: DcgmExporterPlan
    tolerations: list[dict[str, str]]
    labels: dict[str, str]
    scrape_annotations: dict[str, str] | None  # None: a PodMonitor scrapes it (Prometheus operator)
    pod_monitor_labels: dict[str, str] | None  # labels of its PodMonitor; None: no PodMonitor
    scrape_from: list[k8s.networking.v1.NetworkPolicyPeerArgs]  # who may reach its port (network.scrapeFrom)


class DcgmExporter(pulumi.ComponentResource):
    def __init__(self, name: str, args: DcgmExporterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(token("DcgmExporter"), name, None, renamed("DcgmExporter", opts))
        self._args = args
        self._selector = {"app.kubernetes.io/name": "dcgm-exporter", "app.kubernetes.io/instance": name}
        counters = k8s.core.v1.ConfigMap(
            f"{name}-counters",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="dcgm-exporter-counters", namespace=args.plan.namespace, labels=args.labels
            ),
            data={COUNTERS_FILE: COUNTERS},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self._daemon_set(name, counters.metadata.name)
        # Only Prometheus may reach the metrics port; with no scrapeFrom, nothing may.
        ingress_policy(
            name,
            namespace=args.plan.namespace,
            labels=args.labels,
            selector=self._selector,
            ports=[PORT],
            sources=args.scrape_from,
            opts=pulumi.ResourceOptions(parent=self),
        )
        if args.pod_monitor_labels is not None:
            self._pod_monitor(name, args.pod_monitor_labels)
        self.register_outputs({})

    def _container(self) -> k8s.core.v1.ContainerArgs:
        env = [
            k8s.core.v1.EnvVarArgs(name="DCGM_EXPORTER_LISTEN", value=f":{PORT}"),
            k8s.core.v1.EnvVarArgs(name="DCGM_EXPORTER_KUBERNETES", value="true"),
            k8s.core.v1.EnvVarArgs(
                name="NODE_NAME",
                value_from=k8s.core.v1.EnvVarSourceArgs(
                    field_ref=k8s.core.v1.ObjectFieldSelectorArgs(field_path="spec.nodeName")
                ),
            ),
        ]
        if self._args.plan.resource_names:  # time-slicing: pods request nvidia.com/gpu.shared
            env.append(
                k8s.core.v1.EnvVarArgs(
                    name="NVIDIA_RESOURCE_NAMES", value=",".join(self._args.plan.resource_names)
                )
            )
        probe = k8s.core.v1.ProbeArgs(
            http_get=k8s.core.v1.HTTPGetActionArgs(path="/health", port=PORT),
            initial_delay_seconds=45,
            period_seconds=5,
        )
        return k8s.core.v1.ContainerArgs(
            name="dcgm-exporter",
            image=IMAGE,
            image_pull_policy="IfNotPresent",
            args=["-f", f"{COUNTERS_DIR}/{COUNTERS_FILE}"],
            env=env,
            ports=[k8s.core.v1.ContainerPortArgs(name="metrics", container_port=PORT)],
            resources=k8s.core.v1.ResourceRequirementsArgs(
                requests={"cpu": CPU_REQUEST, "memory": MEMORY_REQUEST}, limits={"memory": MEMORY_LIMIT}
            ),
            liveness_probe=probe,
            readiness_probe=probe,
            security_context=container_security_context(as_root=True),
            volume_mounts=[
                k8s.core.v1.VolumeMountArgs(
                    name="pod-resources", mount_path="/var/lib/kubelet/pod-resources", read_only=True
                ),
                k8s.core.v1.VolumeMountArgs(name="counters", mount_path=COUNTERS_DIR, read_only=True),
                k8s.core.v1.VolumeMountArgs(name="tmp", mount_path="/tmp"),
            ],
        )

    def _daemon_set(self, name: str, counters: pulumi.Input[str]) -> None:
        args = self._args
        k8s.apps.v1.DaemonSet(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="dcgm-exporter",
                namespace=args.plan.namespace,
                labels=args.labels,
                annotations=SCANNER_EXCEPTIONS,
            ),
            spec=k8s.apps.v1.DaemonSetSpecArgs(
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=self._selector),
                update_strategy=k8s.apps.v1.DaemonSetUpdateStrategyArgs(type="RollingUpdate"),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        labels={**args.labels, **self._selector}, annotations=args.scrape_annotations
                    ),
                    spec=k8s.core.v1.PodSpecArgs(
                        automount_service_account_token=False,
                        security_context=pod_security_context(as_root=True),
                        node_selector=args.plan.node_selector,
                        tolerations=tolerations(args.tolerations),
                        containers=[self._container()],
                        volumes=[
                            k8s.core.v1.VolumeArgs(
                                name="pod-resources",
                                host_path=k8s.core.v1.HostPathVolumeSourceArgs(
                                    path="/var/lib/kubelet/pod-resources", type="Directory"
                                ),
                            ),
                            k8s.core.v1.VolumeArgs(
                                name="counters",
                                config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name=counters),
                            ),
                            k8s.core.v1.VolumeArgs(
                                name="tmp", empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs()
                            ),
                        ],
                    ),
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _pod_monitor(self, name: str, labels: dict[str, str]) -> None:
        k8s.apiextensions.CustomResource(
            f"{name}-pods",
            api_version="monitoring.coreos.com/v1",
            kind="PodMonitor",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="dcgm-exporter",
                namespace=self._args.plan.namespace,
                labels={**self._args.labels, **labels},
            ),
            spec={
                "selector": {"matchLabels": self._selector},
                "podMetricsEndpoints": [{"port": "metrics", "path": "/metrics"}],
            },
            opts=pulumi.ResourceOptions(parent=self),
        )
