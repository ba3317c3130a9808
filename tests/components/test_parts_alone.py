"""The model store and the device plugin, each declared alone and fed other resources' outputs."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from colo.components import DevicePluginArgs, ModelStore, ModelStoreArgs, NvidiaDevicePlugin
from tests.components.conftest import run_under_mocks

PVC = "kubernetes:core/v1:PersistentVolumeClaim"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def test_a_model_store_claims_from_a_storage_class_another_resource_declares() -> None:
    def build() -> dict[str, pulumi.Input[Any]]:
        storage_class = k8s.storage.v1.StorageClass(
            "fast", metadata={"name": "fast-ssd"}, provisioner="ebs.csi.aws.com"
        )
        store = ModelStore(
            "weights",
            ModelStoreArgs(
                namespace="team-ml",
                storage_class=storage_class.metadata.name,
                size="200Gi",
                access_mode="ReadWriteMany",
                claim_name="weights",
            ),
        )
        return {"claim": store.claim_name, "namespace": store.namespace}

    mocks, outputs = run_under_mocks(build)
    (claim,) = mocks.of_type(PVC)
    assert outputs == {"claim": "weights", "namespace": "team-ml"}
    assert claim.inputs["spec"] == {
        "storageClassName": "fast-ssd",
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": "200Gi"}},
    }
    assert claim.inputs["metadata"]["labels"]["app.kubernetes.io/component"] == "model-store"


def test_a_device_plugin_runs_on_the_nodes_a_node_pools_output_names() -> None:
    def build() -> dict[str, pulumi.Input[Any]]:
        labels = pulumi.Output.from_input({"colo.dev/gpu-pool": "team"})  # GpuNodePool.node_labels, say
        plugin = NvidiaDevicePlugin("plugin", DevicePluginArgs(node_selector=labels, time_slices=2))
        return {"resource": plugin.resource_name}

    mocks, outputs = run_under_mocks(build)
    (daemon_set,) = mocks.of_type(DAEMON_SET)
    pod = daemon_set.inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"colo.dev/gpu-pool": "team"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert daemon_set.inputs["metadata"]["namespace"] == "nvidia-device-plugin"
    (config_map,) = mocks.of_type(CONFIG_MAP)
    assert "replicas: 2" in config_map.inputs["data"]["config.yaml"]
    assert outputs == {"resource": "nvidia.com/gpu.shared"}
