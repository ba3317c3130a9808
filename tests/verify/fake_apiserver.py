"""A local HTTP server that answers the Kubernetes API paths `colo verify` uses, as an API server would.

Paths: list pods by label selector, read a pod's log (container, previous, limitBytes), the service proxy to
a server's /metrics, and read a node. Everything else is a 404 Status. Requests are recorded so tests can
check what the real `kubernetes` client sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from colo.plan.kubernetes_spec import SERVICE_PORT_NAME


@dataclass
class Cluster:
    pods: list[dict[str, Any]] = field(default_factory=list)
    logs: dict[tuple[str, str, bool], str] = field(default_factory=dict)  # (pod, container, previous)
    metrics: dict[str, str] = field(default_factory=dict)  # service -> /metrics text
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> labels
    requests: list[tuple[str, dict[str, list[str]]]] = field(default_factory=list)


def pod(
    name: str, labels: dict[str, str], *, created: str, node: str, terminating: bool = False
) -> dict[str, Any]:
    containers = [
        {"name": "embedding", "image": "vllm/vllm-openai:v0.15.1"},
        {"name": "llm", "image": "vllm/vllm-openai:v0.15.1"},
    ]
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "colo",
        "labels": labels,
        "creationTimestamp": created,
    }
    if terminating:
        metadata["deletionTimestamp"] = created
    return {
        "metadata": metadata,
        "spec": {"nodeName": node, "containers": containers},
        "status": {"phase": "Running"},
    }


def _matches(labels: dict[str, str], selector: str) -> bool:
    wanted = dict(part.split("=", 1) for part in selector.split(",") if part)
    return all(labels.get(key) == value for key, value in wanted.items())


class _Handler(BaseHTTPRequestHandler):
    cluster: Cluster

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, body: str, content_type: str) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _json(self, body: dict[str, Any], status: int = 200) -> None:
        self._send(status, json.dumps(body), "application/json")

    def _not_found(self, what: str) -> None:
        self._json(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": f"{what} not found",
                "reason": "NotFound",
                "code": 404,
            },
            404,
        )

    def do_GET(self) -> None:
        url = urlparse(self.path)
        query = parse_qs(url.query)
        self.cluster.requests.append((url.path, query))
        parts = url.path.strip("/").split("/")
        match parts:
            case ["api", "v1", "namespaces", namespace, "pods"]:
                selector = query.get("labelSelector", [""])[0]
                items = [
                    p
                    for p in self.cluster.pods
                    if p["metadata"]["namespace"] == namespace and _matches(p["metadata"]["labels"], selector)
                ]
                self._json({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})
            case ["api", "v1", "namespaces", _, "pods", name, "log"]:
                key = (
                    name,
                    query.get("container", [""])[0],
                    query.get("previous", ["false"])[0].lower() == "true",
                )  # Go's ParseBool
                if key in self.cluster.logs:
                    self._send(200, self.cluster.logs[key], "text/plain")
                else:
                    self._json(
                        {
                            "kind": "Status",
                            "apiVersion": "v1",
                            "status": "Failure",
                            "message": "container is waiting to start",
                            "reason": "BadRequest",
                            "code": 400,
                        },
                        400,
                    )
            case ["api", "v1", "namespaces", _, "services", target, "proxy", "metrics"]:
                # <name>:<port name>, as the API server's service proxy takes a named port; a bare name (the
                # Service's unnamed port) finds no endpoint on colo's Services, whose one port is named.
                service, _, port = unquote(target).partition(":")
                if service in self.cluster.metrics and port == SERVICE_PORT_NAME:
                    self._send(200, self.cluster.metrics[service], "text/plain; version=0.0.4")
                elif service in self.cluster.metrics:
                    self._send(503, b"no endpoints available for service", "text/plain")
                else:
                    self._not_found(f"service {service}")
            case ["api", "v1", "nodes", name] if name in self.cluster.nodes:
                self._json(
                    {
                        "kind": "Node",
                        "apiVersion": "v1",
                        "metadata": {"name": name, "labels": self.cluster.nodes[name]},
                    }
                )
            case _:
                self._not_found(url.path)


@contextmanager
def serve(cluster: Cluster) -> Iterator[str]:
    """Serve `cluster` on a free local port; yields its URL."""
    handler = type("Handler", (_Handler,), {"cluster": cluster})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # shutdown() waits for serve_forever's next poll: half a second at its default interval
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def write_kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "local", "cluster": {"server": server}}],
                "users": [{"name": "tester", "user": {"token": "not-a-secret"}}],
                "contexts": [
                    {"name": "local", "context": {"cluster": "local", "user": "tester", "namespace": "colo"}}
                ],
                "current-context": "local",
            }
        )
    )
    return path
