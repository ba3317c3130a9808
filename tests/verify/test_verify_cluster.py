"""`colo verify --stack S` end to end through the real `kubernetes` client against a local API server."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest
import yaml

from colo.cli import main
from tests.verify.conftest import EMBEDDER_AS_PLANNED, REAL_LOG, excerpt
from tests.verify.fake_apiserver import Cluster, pod, serve, write_kubeconfig

SELECTOR = {
    "app.kubernetes.io/name": "colo",
    "app.kubernetes.io/instance": "colo-verify",
    "colo.dev/pair": "chat",
}
METRICS = (
    "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n"
    'vllm:cache_config_info{block_size="16",engine="0",gpu_memory_utilization="0.9",num_gpu_blocks="9871"} 1.0\n'
)


@pytest.fixture
def cluster() -> Cluster:
    return Cluster(
        pods=[
            pod("chat-5d8f-old", SELECTOR, created="2026-11-30T10:00:00Z", node="gpu-a", terminating=True),
            pod("chat-7c9b-new", SELECTOR, created="2026-11-30T11:00:00Z", node="gpu-b"),
        ],
        logs={
            ("chat-7c9b-new", "llm", False): excerpt(REAL_LOG),
            ("chat-7c9b-new", "embedding", False): EMBEDDER_AS_PLANNED,
            ("chat-7c9b-new", "llm", True): "INFO: Uvicorn running\n",
        },
        metrics={"chat-llm": METRICS},
        nodes={
            "gpu-b": {
                "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
                "nvidia.com/cuda.driver-version.full": "580.95.05",
            }
        },
    )


@pytest.fixture
def kubeconfig(cluster: Cluster, tmp_path: Path) -> Iterator[Path]:
    with serve(cluster) as url:
        yield write_kubeconfig(tmp_path / "kubeconfig", url)


def test_the_current_pod_of_each_pair_is_read_log_metrics_and_node(
    stack: Path, kubeconfig: Path, cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["verify", "--config", str(stack), "--kubeconfig", str(kubeconfig), "--format", "json"])
    view = json.loads(capsys.readouterr().out)
    assert code == 0 and view["verdict"] == "within"
    servers = {s["server"]: s for s in view["servers"]}
    assert servers["chat-llm"]["source"] == "colo/chat-7c9b-new container llm"
    terms = {t["term"]: t for t in servers["chat-llm"]["terms"]}
    assert terms["num_gpu_blocks"]["observed"] == 9871  # from /metrics through the service proxy
    paths = [unquote(path) for path, _ in cluster.requests]
    assert "/api/v1/namespaces/colo/services/chat-llm:http/proxy/metrics" in paths  # the Service's named port
    logs = {query["container"][0]: query for path, query in cluster.requests if path.endswith("/log")}
    assert set(logs) == {"llm", "embedding"}
    assert logs["llm"]["limitBytes"] == [str(16 * 1024 * 1024)]
    assert all("chat-5d8f-old" not in path for path in paths)  # the terminating pod is not the current one
    listed = next(q for p, q in cluster.requests if p == "/api/v1/namespaces/colo/pods")
    assert listed["labelSelector"] == [
        "app.kubernetes.io/instance=colo-verify,app.kubernetes.io/name=colo,colo.dev/pair=chat"
    ]


def test_record_takes_the_gpu_and_driver_from_the_node(
    stack: Path, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calibration = tmp_path / "calibration.yaml"
    main(["verify", "--config", str(stack), "--kubeconfig", str(kubeconfig), "--record", str(calibration)])
    capsys.readouterr()
    (entry,) = yaml.safe_load(calibration.read_text())["calibrations"]
    (embedder,) = entry["observed"]
    assert (embedder["gpu_name"], embedder["driver"]) == ("NVIDIA-A100-SXM4-40GB", "580.95.05")
    assert embedder["source"] == "colo/chat-7c9b-new container embedding"


def test_previous_reads_the_crashed_run_and_says_when_it_holds_no_startup_lines(
    stack: Path, kubeconfig: Path, cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["verify", "--config", str(stack), "--kubeconfig", str(kubeconfig), "--previous"])
    out = capsys.readouterr().out
    assert code == 2
    assert "chat-llm (colo/chat-7c9b-new container llm (previous run)): NOT READ: the log holds none" in out
    assert "cannot read the log of colo/chat-7c9b-new container embedding (previous run)" in out
    previous = {
        q["container"][0]: q["previous"][0].lower() for p, q in cluster.requests if p.endswith("/log")
    }
    assert previous == {"llm": "true", "embedding": "true"}


def test_a_pair_without_pods_exits_2_naming_where_it_looked(
    stack: Path, kubeconfig: Path, cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.pods.clear()
    assert main(["verify", "--config", str(stack), "--kubeconfig", str(kubeconfig)]) == 2
    assert (
        "no pod of pair chat in colo/pods?app.kubernetes.io/instance=colo-verify" in capsys.readouterr().out
    )


def test_an_api_server_that_does_not_answer_exits_2_plainly(
    stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}")
    code = main(["verify", "--config", str(stack), "--kubeconfig", str(kubeconfig)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"nothing could be read: cannot reach the Kubernetes API at http://127.0.0.1:{port}" in err
