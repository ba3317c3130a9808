"""The start gate used without native sidecars: wait for earlier servers' /health, then exec."""

from __future__ import annotations

from pathlib import Path

from tests.scripts.fakes import Sandbox

WAIT = "wait-for-health.sh"


def _fake_curl_healthy_after(sandbox: Sandbox, attempts: int) -> Path:
    """curl that fails until it has been called `attempts` times; the count lives in a file."""
    counter = sandbox.root / "curl-calls"
    sandbox.fake(
        "curl",
        f"""n=$(( $(cat {counter} 2>/dev/null || echo 0) + 1 ))
echo "$n" > {counter}
[ "$n" -ge {attempts} ]
""",
    )
    return counter


def test_starts_the_server_once_the_earlier_one_is_healthy(sandbox: Sandbox) -> None:
    counter = _fake_curl_healthy_after(sandbox, 3)
    result = sandbox.run(
        WAIT,
        "--url",
        "http://127.0.0.1:8001/health",
        "--timeout",
        "20",
        "--",
        "echo",
        "vllm",
        "serve",
        env={"COLO_HEALTH_POLL_S": "0.05"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "vllm serve"
    assert counter.read_text().strip() == "3"


def test_a_server_that_never_gets_healthy_stops_the_start(sandbox: Sandbox) -> None:
    sandbox.fake("curl", "exit 7\n")
    result = sandbox.run(
        WAIT,
        "--url",
        "http://127.0.0.1:8001/health",
        "--timeout",
        "1",
        "--",
        "echo",
        "started",
        env={"COLO_HEALTH_POLL_S": "0.1"},
    )
    assert result.returncode != 0
    assert "did not answer within 1s" in result.stderr
    assert "started" not in result.stdout


def test_waits_for_every_url_in_order(sandbox: Sandbox) -> None:
    log = sandbox.root / "asked"
    sandbox.fake("curl", f'echo "${{@: -1}}" >> {log}\n')
    result = sandbox.run(
        WAIT,
        "--url",
        "http://a/health",
        "--timeout",
        "5",
        "--url",
        "http://b/health",
        "--timeout",
        "5",
        "--",
        "true",
    )
    assert result.returncode == 0, result.stderr
    assert log.read_text().split() == ["http://a/health", "http://b/health"]


def test_mismatched_urls_and_timeouts_are_refused(sandbox: Sandbox) -> None:
    result = sandbox.run(WAIT, "--url", "http://a/health", "--", "true")
    assert result.returncode != 0
    assert "one --timeout per --url" in result.stderr
