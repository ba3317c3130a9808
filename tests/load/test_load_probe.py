"""`colo load` against fake OpenAI-compatible servers on loopback: phases in order, every phase bounded in requests
and seconds, the probe by its deadline, the cost beside over alone, and no connection or thread left behind."""

from __future__ import annotations

import dataclasses
import functools
import json
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from colo.cli import load_cmd, main
from colo.load.phases import LoadSettings, Phase, costs, probe
from colo.load.portforward import PortForwards, pair_pod
from colo.load.requests import Connection, Target
from colo.verify.cluster import ClusterUnreachable
from tests.load.fake_openai import Gpu, Servers

LOCAL_STACK = Path("stacks/Pulumi.local.yaml")


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def _targets(ports: dict[str, int], api_key: str | None = None) -> tuple[Target, list[Target]]:
    llm = Target("llm", ports["llm"], "Qwen/Qwen3-8B-FP8", "completions", api_key)
    return llm, [Target("embedding", ports["embedding"], "Qwen/Qwen3-Embedding-0.6B", "embeddings", api_key)]


# The companions-alone phase is the one phase that lasts its seconds whatever the servers do: a third of a second
# (the fake's pooling requests take 10 to 50 ms, four at a time) instead of the 10 s `colo load` gives it.
COMPANIONS_ALONE_S = 0.3
FAST = LoadSettings(
    concurrencies=(1, 4),
    requests_per_slot=2,
    max_tokens=16,
    phase_seconds=20,
    companion_seconds=COMPANIONS_ALONE_S,
)


@dataclass(frozen=True)
class FastProbe:
    phases: list[Phase]
    served: dict[str, int]  # the fake servers' count of requests, by path
    workers_left: list[str]  # the probe's worker threads still alive when it returned


@pytest.fixture(scope="module")
def fast_probe() -> FastProbe:
    """One FAST probe against fresh fake servers, read by each test about what any probe must do."""
    gpu = Gpu()
    with Servers(gpu) as servers:
        phases = probe(_connect, *_targets(servers.ports), FAST)
        # the probe's own workers (named after their target); the fake servers' come and go
        left = [t.name for t in threading.enumerate() if "_worker" in t.name]
    return FastProbe(phases, dict(gpu.served), left)


def test_phases_run_companions_alone_then_each_concurrency_alone_and_beside(fast_probe: FastProbe) -> None:
    phases = fast_probe.phases
    assert [p.label for p in phases] == [
        "companions alone",
        "llm c=1 alone",
        "llm c=1 beside companions",
        "llm c=4 alone",
        "llm c=4 beside companions",
    ]
    assert not any(p.skipped for p in phases)


def test_the_llm_sends_exactly_its_bounded_requests_per_phase(fast_probe: FastProbe) -> None:
    llm = {p.label: p.summaries["llm"] for p in fast_probe.phases if "llm" in p.summaries}
    assert [(s["requests"], s["ok"]) for s in llm.values()] == [(4, 4), (4, 4), (8, 8), (8, 8)]
    assert fast_probe.served["/v1/completions"] == 24
    assert all(s["ttft_p50_ms"] is not None and s["tpot_p50_ms"] is not None for s in llm.values())


def test_busy_companions_show_as_a_cost_over_the_llm_alone() -> None:
    # 8 tokens a request: beside four companions each decodes at a fifth of the speed, 16 took 1.3 s a phase
    with Servers(Gpu(token_s=0.004, slowdown_per_companion=1.0, pooling_s=0.05)) as servers:
        phases = probe(_connect, *_targets(servers.ports), dataclasses.replace(FAST, max_tokens=8))
    cost = costs(phases, "llm")
    assert set(cost) == {"c=1", "c=4"}
    assert cost["c=4"]["tpot_p50_percent"] > 50
    assert cost["c=1"]["companions_rate_percent"]["embedding"] is not None


def test_a_phase_ends_at_its_seconds_however_slow_the_llm() -> None:
    slow = LoadSettings(
        concurrencies=(1,),
        requests_per_slot=50,
        max_tokens=64,
        phase_seconds=0.5,
        companion_seconds=COMPANIONS_ALONE_S,
    )
    with Servers(Gpu(token_s=0.02)) as servers:  # 1.3 s a request: 50 would take over a minute
        started = time.monotonic()
        phases = probe(_connect, *_targets(servers.ports), slow)
        took = time.monotonic() - started
    alone = next(p for p in phases if p.label == "llm c=1 alone")
    assert alone.wall_s <= 0.7 and alone.summaries["llm"]["requests"] < 50
    # companions alone, two phases; what was in flight is cut at each end
    assert took < COMPANIONS_ALONE_S + 2 * 0.5 + 2


def test_phases_past_the_deadline_are_skipped_and_said_so() -> None:
    short = LoadSettings(
        concurrencies=(1, 4, 8),
        max_tokens=16,
        phase_seconds=1,
        companion_seconds=COMPANIONS_ALONE_S,
        max_seconds=1,
    )
    with Servers(Gpu(token_s=0.01)) as servers:
        phases = probe(_connect, *_targets(servers.ports), short)
    skipped = [p for p in phases if p.skipped]
    assert skipped and all("s left" in str(p.skipped) for p in skipped)
    assert phases[-1].skipped


def test_no_worker_thread_outlives_the_probe(fast_probe: FastProbe) -> None:
    assert fast_probe.workers_left == []


def test_the_api_key_is_sent_where_the_servers_ask_for_it() -> None:
    with Servers(Gpu(api_key="k")) as servers:
        settings = LoadSettings(concurrencies=(1,), max_tokens=4, companion_seconds=COMPANIONS_ALONE_S)
        refused = probe(_connect, *_targets(servers.ports), settings)
        allowed = probe(_connect, *_targets(servers.ports, "k"), settings)
    assert refused[1].summaries["llm"]["ok"] == 0 and "401" in refused[1].summaries["llm"]["errors"][0]
    assert allowed[1].summaries["llm"]["ok"] == 4


@pytest.fixture
def brief_companions_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """`colo load` keeps the companions busy alone for 10 s, a figure no flag sets; a third of a second shows that
    phase here."""
    monkeypatch.setattr(
        load_cmd, "LoadSettings", functools.partial(LoadSettings, companion_seconds=COMPANIONS_ALONE_S)
    )


def _cli(ports: dict[str, int], *extra: str) -> list[str]:
    return [
        "load",
        "--config",
        str(LOCAL_STACK),
        "--loopback",
        f"llm={ports['llm']}",
        "--loopback",
        f"embedding={ports['embedding']}",
        "--concurrency",
        "1",
        "2",
        "--max-tokens",
        "8",
        *extra,
    ]


@pytest.mark.usefixtures("brief_companions_alone")
def test_colo_load_reports_each_phase_and_the_cost_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    with Servers(Gpu()) as servers:
        assert main(_cli(servers.ports, "--format", "json")) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["pair"] == "chat" and report["path"] == "loopback"
    assert [p["label"] for p in report["phases"]][1:3] == ["llm c=1 alone", "llm c=1 beside companions"]
    assert set(report["cost"]) == {"c=1", "c=2"}


@pytest.mark.usefixtures("brief_companions_alone")
def test_colo_load_prints_a_table_with_the_cost_beside_over_alone(capsys: pytest.CaptureFixture[str]) -> None:
    with Servers(Gpu()) as servers:
        assert main(_cli(servers.ports)) == 0
    out = capsys.readouterr().out
    assert "pair chat (loopback)" in out and "TPOT p50 ms" in out
    assert "beside companions at c=2: TTFT" in out and "over alone" in out


@pytest.mark.usefixtures("brief_companions_alone")
def test_colo_load_with_nothing_listening_says_so_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    code = main(_cli({"llm": port, "embedding": port}, "--max-seconds", "5", "--phase-seconds", "1"))
    assert code == 2
    assert "no LLM request of pair chat succeeded" in capsys.readouterr().err


def test_loopback_needs_one_pair(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["load", "--stack", "prod", "--loopback", "llm=1"]) == 2
    assert "choose it with --pair" in capsys.readouterr().err


def test_a_mistyped_pair_is_told_the_closest_pair_of_the_stack(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["load", "--stack", "prod", "--pair", "qwen27", "--loopback", "llm=1"]) == 2
    err = capsys.readouterr().err
    assert (
        "the stack has no pair qwen27; did you mean qwen27b? its pairs: qwen27b, qwen35b-moe, gemma31b" in err
    )


@pytest.mark.usefixtures("brief_companions_alone")
def test_each_pair_loaded_says_so_on_stderr_and_only_the_report_reaches_stdout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with Servers(Gpu()) as servers:
        assert main(_cli(servers.ports)) == 0
    out, err = capsys.readouterr()
    assert err.startswith("colo load: loading pair chat, alone and beside its companions")
    assert "loading pair" not in out


class _Pod:
    def __init__(self, name: str, phase: str, created: int) -> None:
        self.metadata = type("M", (), {"name": name, "creation_timestamp": created})()
        self.status = type("S", (), {"phase": phase})()


class _Core:
    def __init__(self, pods: list[_Pod]) -> None:
        self.pods = pods
        self.selectors: list[str] = []

    def list_namespaced_pod(self, namespace: str, label_selector: str) -> Any:
        self.selectors.append(f"{namespace}:{label_selector}")
        return type("L", (), {"items": self.pods})()

    def connect_get_namespaced_pod_portforward(self) -> None:  # only passed on, never called here
        raise AssertionError


def test_the_probe_loads_the_pairs_newest_running_pod() -> None:
    core = _Core([_Pod("old", "Running", 1), _Pod("new", "Running", 2), _Pod("next", "Pending", 3)])
    assert pair_pod(core, "colo", {"pair": "chat", "app": "x"}) == "new"
    assert core.selectors == ["colo:app=x,pair=chat"]
    with pytest.raises(ClusterUnreachable, match="no running pod"):
        pair_pod(_Core([_Pod("next", "Pending", 3)]), "colo", {"pair": "chat"})


def test_every_port_forward_opened_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each connection is its own port-forward through the API; close() ends them all, whatever state they are in."""
    opened: list[Any] = []

    class Forward:
        def __init__(self, port: int) -> None:
            self.sock = _connect(port)
            self.closed = False
            opened.append(self)

        def socket(self, port: int) -> socket.socket:
            return self.sock

        def close(self) -> None:
            self.closed = True
            self.sock.close()
            if len(opened) > 1 and self is opened[0]:
                raise OSError("already gone")

    monkeypatch.setattr(
        "kubernetes.stream.portforward", lambda method, pod, namespace, ports: Forward(int(ports))
    )
    with Servers(Gpu()) as servers:
        forwards = PortForwards(_Core([]), "colo", "chat-pod")
        phases = probe(forwards.connect, *_targets(servers.ports), FAST)
        forwards.close()
    assert phases[1].summaries["llm"]["ok"] == 4
    assert opened and all(f.closed for f in opened) and forwards.opened == []


def test_a_connection_sends_each_request_at_once_and_takes_any_socket_a_port_forward_gives() -> None:
    """http.client writes a request's headers and its body apart; without TCP_NODELAY the body waited for the
    server's delayed ACK of the headers, 40 ms counted into every kept-alive request's TTFT."""
    with Servers(Gpu()) as servers:
        connection = Connection(_connect, servers.ports["llm"], 5)
        connection.connect()
        assert connection.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        connection.close()
    ours, theirs = socket.socketpair()  # what kubernetes' port-forward hands over: no TCP socket
    with theirs:
        connection = Connection(lambda port: ours, 8000, 5)
        connection.connect()
        assert connection.sock is ours
        connection.close()
