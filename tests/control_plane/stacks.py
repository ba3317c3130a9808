"""A colo stack on the control plane: its nodes and cluster prerequisites, its `colo render` output applied.

Each stack gets the nodes its node pool would have on EKS (the instance type and count its plan names, the
labels of its pool) and what a cluster admin installs beside colo: a StorageClass of the stack's name with one
volume for the `models` claim, and for `dra` the DeviceClass and ResourceSlices of NVIDIA's DRA driver. On
time-slicing nodes the slices per GPU are read from the device plugin config colo renders, as the plugin itself
reads it. `remove` deletes every object `bring_up` made, waiting for the namespaces to be emptied.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from colo.cli import main
from tests.control_plane.api import Api, ApplyResult, manifests_in, wait_until
from tests.control_plane.nodes import (
    DEVICE_CLASS,
    G6E_2XLARGE,
    G6E_12XLARGE,
    G6E_XLARGE,
    P5E_48XLARGE,
    InstanceType,
    Plugin,
    node,
    resource_slice,
)
from tests.paths import REPO_ROOT

POOL_LABEL = "colo.dev/gpu-pool"
READY_WITHIN = 60.0


@dataclass(frozen=True)
class StackSetup:
    name: str
    stack_file: Path
    instance: InstanceType
    nodes: int
    plugin: Plugin
    # What the nodes carry: the stack's nodeSelector for an existing pool, or the labels of the EKS node group
    # colo manages (its cluster name as pool, and the device plugin's gpu.present).
    pool_labels: dict[str, str]
    storage_class: str
    volume_size: str
    node_pool_edit: dict[str, str] | None = None  # a variant of the stack file: these nodePool keys changed
    cluster_edit: dict[str, str] | None = None  # and these cluster keys

    def stack_file_in(self, directory: Path) -> Path:
        """The stack file to render: the checked-in one, or its variant written into `directory`."""
        if self.node_pool_edit is None and self.cluster_edit is None:
            return self.stack_file
        source: dict[str, Any] = yaml.safe_load(self.stack_file.read_text())
        source["config"]["colo:nodePool"].update(self.node_pool_edit or {})
        source["config"]["colo:cluster"].update(self.cluster_edit or {})
        path = directory / f"Pulumi.{self.name}.yaml"
        path.write_text(yaml.safe_dump(source, sort_keys=False))
        return path


STACKS: dict[str, StackSetup] = {
    "local": StackSetup(
        "local",
        REPO_ROOT / "stacks" / "Pulumi.local.yaml",
        G6E_XLARGE,
        1,
        "time-slicing",
        {POOL_LABEL: "colo"},
        "standard",
        "100Gi",
    ),
    "dev": StackSetup(
        "dev",
        REPO_ROOT / "stacks" / "Pulumi.dev.yaml",
        G6E_2XLARGE,
        1,
        "dra",
        {POOL_LABEL: "colo-dev", "nvidia.com/gpu.present": "true"},
        "gp3",
        "200Gi",
    ),
    "prod": StackSetup(
        "prod",
        REPO_ROOT / "stacks" / "Pulumi.prod.yaml",
        G6E_12XLARGE,
        1,  # three pairs and one spare GPU: one g6e.12xlarge
        "whole",
        {POOL_LABEL: "colo-prod", "nvidia.com/gpu.present": "true"},
        "gp3",
        "500Gi",
    ),
    # prod's pairs on H200s: one p5e.48xlarge holds them with five GPUs to spare.
    "prod-p5e": StackSetup(
        "prod-p5e",
        REPO_ROOT / "stacks" / "Pulumi.prod.yaml",
        P5E_48XLARGE,
        1,
        "whole",
        {POOL_LABEL: "colo-prod", "nvidia.com/gpu.present": "true"},
        "gp3",
        "500Gi",
        node_pool_edit={"gpu": "H200", "instanceType": "p5e.48xlarge"},
    ),
}


def models_volume(storage_class: str, size: str, name: str) -> list[dict[str, Any]]:
    """A StorageClass as the stack names it and one volume of it, so the `models` claim binds as on a cluster
    with a provisioner (no provisioner runs here)."""
    return [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": storage_class},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "Immediate",
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": size},
                "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                "storageClassName": storage_class,
                "persistentVolumeReclaimPolicy": "Retain",
                "hostPath": {"path": f"/var/lib/colo-test/{name}", "type": "DirectoryOrCreate"},
            },
        },
    ]


def render(stack_file: Path, out: Path) -> list[dict[str, Any]]:
    assert main(["render", "--config", str(stack_file), "--cwd", str(REPO_ROOT), "--out", str(out)]) == 0
    return manifests_in(out / "manifests")


def time_slices(manifests: list[dict[str, Any]]) -> int:
    """The replicas per GPU the rendered device plugin config asks for."""
    (config_map,) = [
        m
        for m in manifests
        if m["kind"] == "ConfigMap" and m["metadata"]["name"] == "nvidia-device-plugin-config"
    ]
    config = yaml.safe_load(config_map["data"]["config.yaml"])
    (resource,) = config["sharing"]["timeSlicing"]["resources"]
    return int(resource["replicas"])


@dataclass
class StackOnCluster:
    setup: StackSetup
    manifests: list[dict[str, Any]]
    applied: ApplyResult = field(default_factory=ApplyResult)
    prerequisites: list[dict[str, Any]] = field(default_factory=list)

    @property
    def node_names(self) -> list[str]:
        return [m["metadata"]["name"] for m in self.prerequisites if m["kind"] == "Node"]

    @property
    def namespaces(self) -> list[str]:
        return [m["metadata"]["name"] for m in self.manifests if m["kind"] == "Namespace"]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.manifests if m["kind"] == kind]


def prerequisites(setup: StackSetup, manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    replicas = time_slices(manifests) if setup.plugin == "time-slicing" else 1
    names = [f"{setup.name}-{setup.instance.name.replace('.', '-')}-{index}" for index in range(setup.nodes)]
    objects = [
        node(name, setup.instance, setup.plugin, pool_labels=setup.pool_labels, replicas=replicas)
        for name in names
    ]
    if setup.plugin == "dra":
        objects += [DEVICE_CLASS, *(resource_slice(name, setup.instance) for name in names)]
    objects += models_volume(setup.storage_class, setup.volume_size, f"{setup.name}-models")
    return objects


def nodes_ready(api: Api, names: list[str]) -> bool:
    for name in names:
        status = api.core.read_node(name).status
        if not any(c.type == "Ready" and c.status == "True" for c in status.conditions or []):
            return False
    return True


@contextmanager
def nodes_for_an_engine(api: Api, setup: StackSetup, manifests: list[dict[str, Any]]) -> Iterator[None]:
    """The stack's nodes and other prerequisites applied and Ready, for an engine run to deploy its objects
    onto; on leaving, the stack's namespaces (whatever the run left of them) and the prerequisites go again."""
    made = prerequisites(setup, manifests)
    for prerequisite in made:
        api.apply(prerequisite)
    try:
        names = [m["metadata"]["name"] for m in made if m["kind"] == "Node"]
        wait_until(lambda: nodes_ready(api, names), READY_WITHIN, f"nodes {names} to be Ready")
        yield
    finally:
        api.delete_namespaces([m["metadata"]["name"] for m in manifests if m["kind"] == "Namespace"])
        for prerequisite in reversed(made):
            api.delete(prerequisite)


def bring_up(
    api: Api, setup: StackSetup, out: Path, manifests: list[dict[str, Any]] | None = None
) -> StackOnCluster:
    """The stack's nodes and prerequisites, then its rendered objects, applied in the order colo numbers them."""
    out.mkdir(parents=True, exist_ok=True)
    manifests = manifests if manifests is not None else render(setup.stack_file_in(out), out / "rendered")
    stack = StackOnCluster(setup, manifests)
    for prerequisite in prerequisites(setup, manifests):
        api.apply(prerequisite)
        stack.prerequisites.append(prerequisite)
    wait_until(
        lambda: nodes_ready(api, stack.node_names), READY_WITHIN, f"nodes {stack.node_names} to be Ready"
    )
    stack.applied = api.apply_all(manifests)
    return stack


def remove(api: Api, stack: StackOnCluster) -> None:
    api.delete_namespaces(stack.namespaces)
    for prerequisite in reversed(stack.prerequisites):
        api.delete(prerequisite)
    wait_until(
        lambda: not any(api.exists(p) for p in stack.prerequisites),
        READY_WITHIN,
        "the stack's prerequisites to go",
    )
