"""One loopback control plane per test session (scripts/build-control-plane.sh); these tests skip without it.

Every test module of this package runs in one xdist group, so one worker starts the control plane and the
others never do. A module brings up the nodes and cluster prerequisites its stacks need and takes away what
it made (namespaces, nodes), so the next module finds the cluster as the session started it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.built_tools import CONTROL_PLANE_SCRIPT, KWOK_STAGES, PROMETHEUS_CRDS, absence, bin_dir_of
from tests.control_plane.api import Api, wait_until
from tests.control_plane.cluster import ControlPlane, ServerLogs
from tests.control_plane.stacks import StackOnCluster
from tests.control_plane.workloads import Probes
from tests.verify.conftest import EMBEDDER_AS_PLANNED, REAL_LOG, excerpt
from tests.verify.test_verify_cluster import METRICS

# kwok serves these as the current log of every `llm` and `embedding` container in namespace colo: the real
# public vLLM 0.15.1 log and the embedder summary tests/verify holds against the stack of its conftest; and
# any pod's port 8000 (the LLM's) answers with the /metrics tests/verify serves for that log's run.
LOGGED_NAMESPACE = "colo"
LLM_PORT = 8000


def cri_log(text: str) -> str:
    """A container's output as the kubelet stores it and kwok reads it: the CRI logging format, one
    `<RFC 3339 time> <stream> F <line>` per line (kubernetes/cri-api, "CRI logging format")."""
    return "".join(
        f"2026-12-01T10:00:{i % 60:02d}.000000000Z stdout F {line}\n"
        for i, line in enumerate(text.splitlines())
    )


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    # Tests marked `control_plane` are skipped at collection when it is not built (tests/conftest.py).
    assert absence("control_plane") is None, absence("control_plane")
    bin_dir = bin_dir_of(CONTROL_PLANE_SCRIPT)
    workdir = tmp_path_factory.mktemp("control-plane")
    logs = workdir / "server-logs"
    logs.mkdir()
    (logs / "llm.log").write_text(cri_log(excerpt(REAL_LOG)))
    (logs / "embedding.log").write_text(cri_log(EMBEDDER_AS_PLANNED))
    plane = ControlPlane(
        bin_dir,
        bin_dir.parent / KWOK_STAGES,
        workdir,
        server_logs=[
            ServerLogs(LOGGED_NAMESPACE, {"llm": logs / "llm.log", "embedding": logs / "embedding.log"})
        ],
        pod_answers={LLM_PORT: METRICS},
    )
    try:
        plane.start()
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def api(control_plane: ControlPlane) -> Api:
    return Api(control_plane.kubeconfig)


@pytest.fixture(scope="session")
def prometheus_crds(api: Api) -> list[str]:
    """The PodMonitor and PrometheusRule CRDs of prometheus-operator v0.93.0, installed and established."""
    import yaml

    crd_dir = bin_dir_of(CONTROL_PLANE_SCRIPT).parent
    names: list[str] = []
    for relative in PROMETHEUS_CRDS:
        crd: dict[str, Any] = yaml.safe_load((crd_dir / relative).read_text())
        api.apply(crd)
        names.append(crd["metadata"]["name"])

    def established() -> bool:
        for name in names:
            status = (
                api.get(
                    {
                        "apiVersion": "apiextensions.k8s.io/v1",
                        "kind": "CustomResourceDefinition",
                        "metadata": {"name": name},
                    }
                ).get("status")
                or {}
            )
            if not any(
                c["type"] == "Established" and c["status"] == "True" for c in status.get("conditions") or []
            ):
                return False
        return True

    wait_until(established, 60, "the prometheus-operator CRDs to be established")
    api.dynamic.resources.invalidate_cache()  # discovery must see the new kinds
    return names


@pytest.fixture
def probes(api: Api, stack: StackOnCluster) -> Iterator[Probes]:
    """Probe pods beside the `stack` of the test's module, removed after the test."""
    made = Probes(api, stack)
    try:
        yield made
    finally:
        made.remove()
