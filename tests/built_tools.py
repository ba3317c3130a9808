"""Tools that some suites need but the test run does not build: each is built once by a project script and
cached by version. Where one is missing, every test marked for it is skipped with one reason, reported as
one line of the summary (tests/conftest.py), never failed or left to hang."""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.paths import REPO_ROOT

PULUMI_ENGINE_SCRIPT = REPO_ROOT / "scripts" / "build-pulumi-engine.sh"
PULUMI_ENGINE_BINARIES = ("pulumi", "pulumi-resource-kubernetes")
CONTROL_PLANE_SCRIPT = REPO_ROOT / "scripts" / "build-control-plane.sh"
CONTROL_PLANE_BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
# Beside bin/: the node and pod stages of the kwok release built, and the prometheus-operator CRDs.
KWOK_STAGES = "kwok-stages.yaml"
E2E_SWITCH = "COLO_E2E"  # =1: run the control-plane tests (make e2e sets it)
PROMETHEUS_CRDS = (
    "crds/monitoring.coreos.com_podmonitors.yaml",
    "crds/monitoring.coreos.com_prometheusrules.yaml",
)
PULUMI_YAML_SCRIPT = REPO_ROOT / "scripts" / "build-pulumi-yaml.sh"
PULUMI_YAML_BINARIES = ("pulumi-language-yaml",)


def bin_dir_of(script: Path) -> Path:
    """The cache directory a build script fills, as the script itself computes it (`--print-bin-dir`)."""
    printed = subprocess.run(
        ["bash", str(script), "--print-bin-dir"], capture_output=True, text=True, check=True
    )
    return Path(printed.stdout.strip())


def missing_from(bin_dir: Path, binaries: tuple[str, ...]) -> list[str]:
    return [name for name in binaries if not os.access(bin_dir / name, os.X_OK)]


@dataclass(frozen=True)
class BuiltTool:
    marker: str  # the pytest marker of the tests that need it
    absent: Callable[[], str | None]  # why the tool cannot be used here, or None when it can


def pulumi_engine_absent() -> str | None:
    bin_dir = bin_dir_of(PULUMI_ENGINE_SCRIPT)
    missing = missing_from(bin_dir, PULUMI_ENGINE_BINARIES)
    if not missing:
        return None
    return (
        f"the real Pulumi engine is not built ({', '.join(missing)} missing from {bin_dir}): "
        "run scripts/build-pulumi-engine.sh once (it compiles the pulumi CLI and the Kubernetes provider from "
        "their Go modules and caches them by version; set COLO_PULUMI_ENGINE_CACHE to choose where)"
    )


def control_plane_absent() -> str | None:
    bin_dir = bin_dir_of(CONTROL_PLANE_SCRIPT)
    missing = missing_from(bin_dir, CONTROL_PLANE_BINARIES)
    missing += [name for name in (KWOK_STAGES, *PROMETHEUS_CRDS) if not (bin_dir.parent / name).is_file()]
    if not missing:
        if os.environ.get(E2E_SWITCH) == "1":
            return None
        # Built, but asked for: in two runs of the whole suite a pytest-xdist worker holding the control
        # plane died mid-run (cause not found yet) and the controller then waited for it for good.
        return (
            f"the Kubernetes control plane is built, but its tests run only when asked: `make e2e` (or "
            f"{E2E_SWITCH}=1 pytest -p no:xdist -m control_plane)"
        )
    return (
        f"the Kubernetes control plane is not built ({', '.join(missing)} missing from {bin_dir}): run "
        "scripts/build-control-plane.sh once, or `make e2e` (it compiles etcd, kube-apiserver, "
        "kube-controller-manager, kube-scheduler and kwok from their Go modules and caches them by version; "
        "set COLO_CONTROL_PLANE_CACHE to choose where)"
    )


def pulumi_yaml_absent() -> str | None:
    bin_dir = bin_dir_of(PULUMI_YAML_SCRIPT)
    missing = missing_from(bin_dir, PULUMI_YAML_BINARIES)
    if not missing:
        return None
    return (
        f"Pulumi YAML's language host is not built ({', '.join(missing)} missing from {bin_dir}): run "
        "scripts/build-pulumi-yaml.sh once (it compiles it from its Go module and caches it by version)"
    )


BUILT_TOOLS: tuple[BuiltTool, ...] = (
    BuiltTool("engine", pulumi_engine_absent),
    BuiltTool("control_plane", control_plane_absent),
    BuiltTool("pulumi_yaml", pulumi_yaml_absent),
)


@functools.cache
def absence(marker: str) -> str | None:
    """Why the tool behind `marker` is missing (asked once per process), or None when it is built."""
    (tool,) = [tool for tool in BUILT_TOOLS if tool.marker == marker]
    return tool.absent()
