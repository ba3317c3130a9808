"""NVIDIA's device plugin as plain objects (namespace, ConfigMap, DaemonSet), so `colo render` can show them.
Its pods admit no ingress: the plugin serves kubelet over a unix socket, nothing over the network.

Its Helm chart cannot be rendered offline; this mirrors the upstream static manifest
(deployments/static/nvidia-device-plugin.yml) plus the config file the chart would mount. Time-slicing
advertises `nvidia.com/gpu.shared` (renameByDefault), so a pod written for whole GPUs can never land on a
slice by accident, and a container can ask for one slice only (failRequestsGreaterThanOne).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s
import yaml

from colo.components.containers import tolerations
from colo.components.contract import renamed, token
from colo.components.labels import DEFAULT_INSTANCE, colo_labels
from colo.components.network_policy import deny_all_ingress
from colo.components.pod_security import (
    DEVICE_PLUGIN_LEVEL,
    container_security_context,
    pod_security_context,
    pod_security_labels,
)
from colo.plan.scheduling import gpu_tolerations

IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.4"  # the release AWS documents for EKS AL2023 nodes
CONFIG_DIR = "/etc/nvidia-device-plugin"
CONFIG_FILE = "config.yaml"
SHARED_RESOURCE = "nvidia.com/gpu.shared"
WHOLE_RESOURCE = "nvidia.com/gpu"
# Policy-scanner findings that are inherent to a device plugin (docs/checkov.md explains each).
SCANNER_EXCEPTIONS = {
    "checkov.io/skip1": "CKV_K8S_23=writes its socket into the root-owned kubelet device-plugins directory",
    "checkov.io/skip2": "CKV_K8S_40=runs as root for the same reason; no UID choice applies",
    "checkov.io/skip3": "CKV_K8S_8=the plugin serves no HTTP; kubelet re-registration is its health signal",
    "checkov.io/skip4": "CKV_K8S_9=the plugin serves no HTTP and receives no traffic",
}
# The plugin is a small Go daemon; upstream ships it without requests, which leaves it first to be evicted.
CPU_REQUEST, MEMORY_REQUEST, MEMORY_LIMIT = "50m", "64Mi", "256Mi"


def plugin_config(time_slices: int | None) -> dict[str, object]:
    """The plugin's v1 config file; time slicing only when `time_slices` is given."""
    config: dict[str, object] = {"version": "v1", "flags": {"migStrategy": "none", "failOnInitError": True}}
    if time_slices is not None:
        config["sharing"] = {
            "timeSlicing": {
                "renameByDefault": True,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": WHOLE_RESOURCE, "replicas": time_slices}],
            }
        }
    return config


@dataclass(frozen=True)
class DevicePluginArgs:
    """NVIDIA's device plugin on the GPU nodes `node_selector` selects (e.g. GpuNodePool.node_labels)."""

    node_selector: pulumi.Input[Mapping[str, pulumi.Input[str]]]
    namespace: str = "nvidia-device-plugin"  # declared here, at the privileged Pod Security level
    kubernetes_version: str = "1.34"  # the Pod Security policy version the namespace pins
    tolerations: Sequence[Mapping[str, str]] = field(default_factory=lambda: list(gpu_tolerations()))
    # Replicas per GPU for time-slicing (the most servers of a pair on these nodes); None = whole GPUs.
    time_slices: int | None = None
    labels: Mapping[str, str] = field(default_factory=lambda: colo_labels(DEFAULT_INSTANCE, "device-plugin"))


class NvidiaDevicePlugin(pulumi.ComponentResource):
    resource_name: str

    def __init__(self, name: str, args: DevicePluginArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(token("NvidiaDevicePlugin"), name, None, renamed("NvidiaDevicePlugin", opts))
        self._args = args
        self.resource_name = SHARED_RESOURCE if args.time_slices is not None else WHOLE_RESOURCE
        namespace = self._define_namespace(name)
        deny_all_ingress(
            f"{name}-deny-ingress",
            namespace=namespace.metadata.name,
            labels=dict(self._args.labels),
            selector=self._selector(name),
            opts=pulumi.ResourceOptions(parent=self),
        )
        config_map = self._define_config(name, namespace.metadata.name)
        self._define_daemon_set(name, namespace.metadata.name, config_map.metadata.name)
        self.register_outputs({"resourceName": self.resource_name})

    @staticmethod
    def _selector(name: str) -> dict[str, str]:
        return {"app.kubernetes.io/name": "nvidia-device-plugin", "app.kubernetes.io/instance": name}

    def _define_namespace(self, name: str) -> k8s.core.v1.Namespace:
        # hostPath for the kubelet's device-plugin socket is only allowed at the privileged level, which is
        # why the plugin lives apart from the servers' restricted namespace.
        return k8s.core.v1.Namespace(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=self._args.namespace,
                labels={
                    **self._args.labels,
                    **pod_security_labels(DEVICE_PLUGIN_LEVEL, self._args.kubernetes_version),
                },
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _define_config(self, name: str, namespace: pulumi.Input[str]) -> k8s.core.v1.ConfigMap:
        return k8s.core.v1.ConfigMap(
            f"{name}-config",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="nvidia-device-plugin-config", namespace=namespace, labels=dict(self._args.labels)
            ),
            data={CONFIG_FILE: yaml.safe_dump(plugin_config(self._args.time_slices), sort_keys=False)},
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _define_daemon_set(
        self, name: str, namespace: pulumi.Input[str], config_map: pulumi.Input[str]
    ) -> k8s.apps.v1.DaemonSet:
        selector = self._selector(name)
        container = k8s.core.v1.ContainerArgs(
            name="nvidia-device-plugin",
            image=IMAGE,
            image_pull_policy="IfNotPresent",
            env=[k8s.core.v1.EnvVarArgs(name="CONFIG_FILE", value=f"{CONFIG_DIR}/{CONFIG_FILE}")],
            resources=k8s.core.v1.ResourceRequirementsArgs(
                requests={"cpu": CPU_REQUEST, "memory": MEMORY_REQUEST}, limits={"memory": MEMORY_LIMIT}
            ),
            security_context=container_security_context(as_root=True),
            volume_mounts=[
                k8s.core.v1.VolumeMountArgs(
                    name="device-plugins", mount_path="/var/lib/kubelet/device-plugins"
                ),
                k8s.core.v1.VolumeMountArgs(name="config", mount_path=CONFIG_DIR, read_only=True),
            ],
        )
        return k8s.apps.v1.DaemonSet(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="nvidia-device-plugin",
                namespace=namespace,
                labels=dict(self._args.labels),
                annotations=SCANNER_EXCEPTIONS,
            ),
            spec=k8s.apps.v1.DaemonSetSpecArgs(
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=selector),
                update_strategy=k8s.apps.v1.DaemonSetUpdateStrategyArgs(type="RollingUpdate"),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels={**self._args.labels, **selector}),
                    spec=k8s.core.v1.PodSpecArgs(
                        priority_class_name="system-node-critical",
                        automount_service_account_token=False,
                        security_context=pod_security_context(as_root=True),
                        node_selector=self._args.node_selector,
                        tolerations=tolerations(list(self._args.tolerations)),
                        containers=[container],
                        volumes=[
                            k8s.core.v1.VolumeArgs(
                                name="device-plugins",
                                host_path=k8s.core.v1.HostPathVolumeSourceArgs(
                                    path="/var/lib/kubelet/device-plugins", type="Directory"
                                ),
                            ),
                            k8s.core.v1.VolumeArgs(
                                name="config",
                                config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name=config_map),
                            ),
                        ],
                    ),
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
