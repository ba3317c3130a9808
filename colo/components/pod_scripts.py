"""colo/scripts/*.sh as a ConfigMap, so pods run the same files the tests run (with `bash`, never inline)."""

from __future__ import annotations

from importlib import resources

import pulumi
import pulumi_kubernetes as k8s

SCRIPTS_DIR = "/opt/colo/scripts"
SCRIPT_NAMES = ("gpu-uuid-discover.sh", "gpu-uuid-consume.sh", "wait-for-health.sh")
CONFIG_MAP_NAME = "colo-scripts"  # where a stack shares one


def script_path(name: str) -> str:
    return f"{SCRIPTS_DIR}/{name}"


def read_scripts() -> dict[str, str]:
    folder = resources.files("colo") / "scripts"
    return {name: (folder / name).read_text() for name in SCRIPT_NAMES}


def scripts_config_map(
    name: str,
    *,
    namespace: pulumi.Input[str],
    labels: dict[str, str],
    config_map_name: str = CONFIG_MAP_NAME,
    opts: pulumi.ResourceOptions,
) -> k8s.core.v1.ConfigMap:
    return k8s.core.v1.ConfigMap(
        name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=config_map_name, namespace=namespace, labels=labels),
        data=read_scripts(),
        opts=opts,
    )
