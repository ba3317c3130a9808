"""A Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok.

The binaries are the ones scripts/build-control-plane.sh built. Every process listens on 127.0.0.1 only, on
ports chosen free at start; kwok plays the kubelet of every node that carries its annotation, marks their pods
Running and Ready, and serves their logs from files (its ClusterLogs config), which the API server reads as it
would a kubelet's. The API server reaches nodes and pods only through the egress proxy of
tests/control_plane/egress.py, which lets nothing past loopback. `stop` ends exactly the processes `start`
began, newest first, then that proxy.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.control_plane.certs import Certificates, generate
from tests.control_plane.egress import EgressProxy, egress_config

READY_WITHIN_SECONDS = 180.0  # the API server's first start compiles its OpenAPI on two shared cores
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_VALUE = "fake"
# Addresses handed out as data only: nothing routes to a Service or pod here (the egress proxy answers instead).
SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.0/16"


# What kubelet does with a running pod that is being deleted and kwok's stages leave out: stop its containers
# and move it to a terminal phase. A pod with a DRA claim needs it: the claim keeps its delete-protection
# finalizer while a pod that is not terminal reserves it, and a foreground deletion of the pod waits for the
# claim, so without this the pod and its Deployment are never deleted. Our stage, weighted above kwok's
# pod-delete so that it comes first; pod-delete then removes the terminal pod.
STOP_ON_DELETE: dict[str, object] = {
    "apiVersion": "kwok.x-k8s.io/v1alpha1",
    "kind": "Stage",
    "metadata": {"name": "colo-stop-pod-on-delete"},
    "spec": {
        "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
        "selector": {
            "matchExpressions": [
                {"key": ".metadata.deletionTimestamp", "operator": "Exists"},
                {"key": ".status.phase", "operator": "In", "values": ["Running"]},
            ]
        },
        "weight": 100,
        "next": {
            "statusTemplate": "\n".join(
                [
                    "{{ $now := Now }}",
                    "phase: Succeeded",
                    "conditions:",
                    "- type: Ready",
                    '  status: "False"',
                    "  lastTransitionTime: {{ $now | Quote }}",
                    "containerStatuses:",
                    "{{ range .spec.containers }}",
                    "- name: {{ .name | Quote }}",
                    "  image: {{ .image | Quote }}",
                    "  ready: false",
                    "  restartCount: 0",
                    "  state:",
                    "    terminated:",
                    "      exitCode: 0",
                    "      reason: Completed",
                    "      startedAt: {{ $now | Quote }}",
                    "      finishedAt: {{ $now | Quote }}",
                    "{{ end }}",
                ]
            )
        },
    },
}


class ControlPlaneFailed(Exception):
    """A component exited or never became ready; the message carries the end of its log."""


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the process that started it dies (Linux prctl
    PR_SET_PDEATHSIG), so a test run that is killed leaves no control plane behind."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Component:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


@dataclass(frozen=True)
class ServerLogs:
    """The files kwok serves as the current log of every pod's container of that name, per namespace."""

    namespace: str
    by_container: dict[str, Path]


@dataclass
class ControlPlane:
    bin_dir: Path
    kwok_stages: Path
    workdir: Path
    server_logs: list[ServerLogs] = field(default_factory=list)
    pod_answers: dict[int, str] = field(default_factory=dict)  # port -> what a pod there serves (egress.py)
    egress: EgressProxy | None = None
    components: list[Component] = field(default_factory=list)
    certs: Certificates | None = None
    apiserver_port: int = 0

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    def start(self) -> None:
        self.certs = generate(self.workdir / "pki")
        self.egress = EgressProxy(self.workdir / "egress.sock", self.pod_answers)
        threading.Thread(target=self.egress.serve_forever, daemon=True).start()
        etcd_port = self._start_etcd()
        self._start_apiserver(etcd_port)
        self._write_kubeconfig()
        self._start_controller_manager()
        self._start_scheduler()
        self._start_kwok()

    def stop(self) -> None:
        for component in reversed(self.components):
            if component.process.poll() is None:
                component.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 20
        for component in reversed(self.components):
            try:
                component.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                component.process.kill()
                component.process.wait()
        self.components.clear()
        if self.egress is not None:
            self.egress.shutdown()
            self.egress.server_close()
            self.egress = None

    # --- processes -------------------------------------------------------------------------------------

    def _launch(self, name: str, args: list[str]) -> Component:
        log = self.workdir / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(self.bin_dir / name), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.workdir,
                env={"PATH": os.environ.get("PATH", ""), "HOME": str(self.workdir)},
                start_new_session=True,  # a Ctrl-C of the test run reaches pytest, which stops these itself
                preexec_fn=_die_with_parent,
            )
        component = Component(name, process, log)
        self.components.append(component)
        return component

    def _wait(self, component: Component, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + READY_WITHIN_SECONDS
        while time.monotonic() < deadline:
            if component.process.poll() is not None:
                raise ControlPlaneFailed(
                    f"{component.name} exited with {component.process.returncode}:\n{component.tail()}"
                )
            if ready():
                return
            time.sleep(0.5)
        raise ControlPlaneFailed(
            f"{component.name} not ready in {READY_WITHIN_SECONDS:.0f} s:\n{component.tail()}"
        )

    @staticmethod
    def _answers(
        url: str, context: ssl.SSLContext | None = None, expect: bytes = b"ok"
    ) -> Callable[[], bool]:
        def probe() -> bool:
            try:
                with urllib.request.urlopen(url, timeout=2, context=context) as response:
                    return bool(response.status == 200 and expect in response.read())
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                return False

        return probe

    def _start_etcd(self) -> int:
        client, peer = free_port(), free_port()
        etcd = self._launch(
            "etcd",
            [
                "--name=colo-test",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{client}",
                f"--advertise-client-urls=http://127.0.0.1:{client}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=colo-test=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync",  # throw-away data; fsync on a shared disk only slows the tests
                "--log-level=warn",
            ],
        )
        self._wait(etcd, self._answers(f"http://127.0.0.1:{client}/health", expect=b'"health":"true"'))
        return client

    def _start_apiserver(self, etcd_port: int) -> None:
        assert self.certs is not None
        certs = self.certs
        self.apiserver_port = free_port()
        assert self.egress is not None
        egress = self.workdir / "egress-selector.yaml"
        egress.write_text(yaml.safe_dump(egress_config(Path(self.egress.server_address))))
        apiserver = self._launch(
            "kube-apiserver",
            [
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.apiserver_port}",
                f"--cert-dir={self.workdir / 'apiserver'}",
                f"--tls-cert-file={certs.apiserver.cert}",
                f"--tls-private-key-file={certs.apiserver.key}",
                f"--client-ca-file={certs.ca.cert}",
                f"--kubelet-client-certificate={certs.kubelet_client.cert}",
                f"--kubelet-client-key={certs.kubelet_client.key}",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={certs.service_account_public}",
                f"--service-account-signing-key-file={certs.service_account_key}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--authorization-mode=Node,RBAC",
                # PodSecurity is on by default; naming it keeps enforcement on whatever the defaults become.
                "--enable-admission-plugins=NodeRestriction,PodSecurity",
                # As on EKS: privileged pods are allowed by the cluster, so only Pod Security can refuse one.
                "--allow-privileged=true",
                # The Endpoints of the `kubernetes` Service may not hold a loopback address.
                "--endpoint-reconciler-type=none",
                f"--egress-selector-config-file={egress}",
                "--profiling=false",
            ],
        )
        context = ssl.create_default_context(cafile=str(certs.ca.cert))
        self._wait(apiserver, self._answers(f"{self.server}/readyz", context))

    def _write_kubeconfig(self) -> None:
        assert self.certs is not None
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "colo-test",
                    "cluster": {"server": self.server, "certificate-authority": str(self.certs.ca.cert)},
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate": str(self.certs.admin.cert),
                        "client-key": str(self.certs.admin.key),
                    },
                }
            ],
            "contexts": [{"name": "colo-test", "context": {"cluster": "colo-test", "user": "admin"}}],
            "current-context": "colo-test",
        }
        self.kubeconfig.write_text(yaml.safe_dump(config))

    def _start_controller_manager(self) -> None:
        assert self.certs is not None
        port = free_port()
        manager = self._launch(
            "kube-controller-manager",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={self.workdir / 'controller-manager'}",
                f"--service-account-private-key-file={self.certs.service_account_key}",
                f"--root-ca-file={self.certs.ca.cert}",
                "--use-service-account-credentials=true",
                "--leader-elect=false",
                "--profiling=false",
            ],
        )
        self._wait(
            manager, self._answers(f"https://127.0.0.1:{port}/healthz", ssl._create_unverified_context())
        )

    def _start_scheduler(self) -> None:
        port = free_port()
        scheduler = self._launch(
            "kube-scheduler",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={self.workdir / 'scheduler'}",
                "--leader-elect=false",
                "--profiling=false",
            ],
        )
        self._wait(
            scheduler, self._answers(f"https://127.0.0.1:{port}/healthz", ssl._create_unverified_context())
        )

    def _kwok_config(self) -> Path:
        """kwok's stages as its release ships them, and the files it serves as container logs."""
        documents = [d for d in yaml.safe_load_all(self.kwok_stages.read_text()) if d] + [STOP_ON_DELETE]
        for index, logs in enumerate(self.server_logs):
            documents.append(
                {
                    "apiVersion": "kwok.x-k8s.io/v1alpha1",
                    "kind": "ClusterLogs",
                    "metadata": {"name": f"colo-logs-{index}"},
                    "spec": {
                        "selector": {"matchNamespaces": [logs.namespace]},
                        "logs": [
                            {"containers": [container], "logsFile": str(path), "follow": False}
                            for container, path in sorted(logs.by_container.items())
                        ],
                    },
                }
            )
        path = self.workdir / "kwok.yaml"
        path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
        return path

    def _start_kwok(self) -> None:
        port = free_port()
        kwok = self._launch(
            "kwok",
            [
                f"--config={self._kwok_config()}",
                f"--kubeconfig={self.kubeconfig}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}={KWOK_NODE_VALUE}",
                f"--cidr={POD_CIDR}",
                "--node-ip=127.0.0.1",
                f"--node-port={port}",
                f"--server-address=127.0.0.1:{port}",
            ],
        )
        self._wait(kwok, self._answers(f"http://127.0.0.1:{port}/healthz"))
