"""colo/scripts/*.sh as a ConfigMap, so pods run the same files the tests run (with `bash`, never inline)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import pulumi
import pulumi_kubernetes as k8s

SCRIPTS_DIR = "/opt/colo/scripts"
SCRIPT_NAMES = ("gpu-uuid-discover.sh", "gpu-uuid-consume.sh", "wait-for-health.sh")


def script_path(name: str) -> str:
    return f"{SCRIPTS_DIR}/{name}"


def read_scripts() -> dict[str, str]:
    folder = resources.files("colo") / "scripts"
    return {name: (folder / name).read_text() for name in SCRIPT_NAMES}


@dataclass(frozen=True)
class PodScriptsArgs:
    namespace: pulumi.Input[str]
    labels: dict[str, str]
    config_map_name: str = "colo-scripts"


class PodScripts(pulumi.ComponentResource):
    config_map_name: pulumi.Output[str]

    def __init__(self, name: str, args: PodScriptsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("colo:pod_scripts:PodScripts", name, None, opts)
        config_map = k8s.core.v1.ConfigMap(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.config_map_name, namespace=args.namespace, labels=args.labels
            ),
            data=read_scripts(),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.config_map_name = config_map.metadata.name
        self.register_outputs({"config_map_name": self.config_map_name})
