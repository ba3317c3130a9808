"""The API server's egress proxy lets nothing past loopback: a tunnel to 127.0.0.1 is forwarded, a tunnel to a
pod is answered from the tests' text for its port or refused, and no connection leaves for a pod address."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.control_plane.egress import EgressProxy, egress_config


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(1024):
            self.request.sendall(data.upper())


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[EgressProxy]:
    server = EgressProxy(tmp_path / "egress.sock", {8000: "vllm:num_requests_running 0\n"})
    # shutdown() waits for serve_forever's next poll: half a second a server at its default interval
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def connect(proxy: EgressProxy, target: str) -> tuple[socket.socket, bytes]:
    client = socket.socket(socket.AF_UNIX)
    client.settimeout(10)
    client.connect(str(proxy.server_address))
    client.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    return client, client.recv(4096)


def test_a_tunnel_to_loopback_reaches_the_server_there(proxy: EgressProxy) -> None:
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo) as echo:
        threading.Thread(target=echo.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        client, reply = connect(proxy, f"127.0.0.1:{echo.server_address[1]}")
        with client:
            assert reply.startswith(b"HTTP/1.1 200")
            client.sendall(b"kubelet")
            assert client.recv(1024) == b"KUBELET"
        echo.shutdown()


def test_a_tunnel_to_a_pod_port_with_an_answer_gets_that_answer_from_the_proxy_itself(
    proxy: EgressProxy,
) -> None:
    client, reply = connect(proxy, "10.244.0.7:8000")
    with client:
        assert reply.startswith(b"HTTP/1.1 200")
        client.sendall(b"GET /metrics HTTP/1.1\r\nHost: 10.244.0.7:8000\r\n\r\n")
        response = b""
        while data := client.recv(4096):
            response += data
    assert response.startswith(b"HTTP/1.1 200 OK") and response.endswith(b"vllm:num_requests_running 0\n")


def test_any_other_tunnel_is_refused(proxy: EgressProxy) -> None:
    client, reply = connect(proxy, "10.244.0.7:9100")
    client.close()
    assert reply.startswith(b"HTTP/1.1 403")
    assert proxy.targets == ["10.244.0.7:9100"]


def test_the_api_server_is_told_to_send_cluster_traffic_through_the_socket(tmp_path: Path) -> None:
    config = egress_config(tmp_path / "egress.sock")
    assert config["egressSelections"] == [
        {
            "name": "cluster",
            "connection": {
                "proxyProtocol": "HTTPConnect",
                "transport": {"uds": {"udsName": str(tmp_path / "egress.sock")}},
            },
        }
    ]
