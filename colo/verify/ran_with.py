"""What the servers actually ran with, so `colo verify --plan FILE` compares their logs with that plan and not
with whatever the stack plans today (a plan derives other utilizations once colo's memory model moves on).

FILE is either `colo plan --format json` as it was when the servers started, or a GPU run's spec
(bench/gpu/make_spec.py; its records file holds it under "spec"), which also says which log stands for which
server (one process started once for identical servers of several stacks). The flags that size memory are
pinned in the stack as the keys that produce them, the stack is planned again, and any flag that still
differs from what ran is said beside the verdict.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from colo.errors import Problem, UsageError

# `vllm serve` flags that size memory -> the server key that produces each (a switch: True when present).
PINNED_FLAGS = {
    "--gpu-memory-utilization": "gpuMemoryUtilization",
    "--max-model-len": "maxModelLen",
    "--max-num-seqs": "maxNumSeqs",
    "--max-num-batched-tokens": "maxNumBatchedTokens",
    "--kv-cache-dtype": "kvCacheDtype",
    "--kv-cache-memory-bytes": "kvCacheMemoryBytes",
    "--enforce-eager": "enforceEager",
}
NUMBERS = {"gpuMemoryUtilization": float, "maxModelLen": int, "maxNumSeqs": int, "maxNumBatchedTokens": int}


@dataclass(frozen=True)
class RanServer:
    name: str  # the planned server, <pair>-<role>
    args: tuple[str, ...]  # `vllm serve` arguments after the program name, as it ran
    log_stem: str  # the log file's name without .log: its own name, or the server it stood in for
    # the planned servers already running on the GPU when it started (None: the file does not say)
    started_beside: frozenset[str] | None = None


def flag_values(args: Sequence[str]) -> dict[str, str | bool]:
    """`--flag value` and `--switch` pairs of a `vllm serve` argument list (the model path left out)."""
    values: dict[str, str | bool] = {}
    for index, arg in enumerate(args):
        if not arg.startswith("--"):
            continue
        following = args[index + 1] if index + 1 < len(args) else None
        values[arg] = following if following is not None and not following.startswith("--") else True
    return values


def _from_plan(view: Mapping[str, Any]) -> dict[str, RanServer]:
    return {
        server["name"]: RanServer(server["name"], tuple(server["vllm_args"]), server["name"])
        for pair in view["pairs"]
        for server in pair["servers"]
    }


def _running_before(spec: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """Per started process (spec key): the planned names of the processes running when it started, from the
    run's actions in order (a start adds one, a stop removes it)."""
    stands_for = {key: server.get("stands_for") or [key] for key, server in spec["servers"].items()}
    running: list[str] = []
    before: dict[str, frozenset[str]] = {}
    for action in spec.get("actions") or []:
        if "start" in action:
            before[action["start"]] = frozenset(
                name for key in running for name in stands_for.get(key, [key])
            )
            running.append(action["start"])
        elif "stop" in action and action["stop"] in running:
            running.remove(action["stop"])
    return before


def _from_spec(spec: Mapping[str, Any]) -> dict[str, RanServer]:
    before = _running_before(spec)
    found: dict[str, RanServer] = {}
    for key, server in spec["servers"].items():
        for name in server.get("stands_for") or [key]:
            found[name] = RanServer(name, tuple(server["args"]), key, before.get(key))
    return found


def start_order_note(server: RanServer, planned_before: Sequence[str]) -> str | None:
    """Where the run started a server beside other processes than the plan puts before it in its pair: its
    free memory at startup then differs by their share, whatever the memory model says."""
    if server.started_beside is None:
        return None
    pair = server.name.rsplit("-", 1)[0]
    beside = sorted(name for name in server.started_beside if name.rsplit("-", 1)[0] == pair)
    if beside == sorted(planned_before):
        return None
    return (
        f"the run started it beside {', '.join(beside) or 'nothing'}, the plan after "
        f"{', '.join(planned_before) or 'nothing'}: its free memory at startup differs by their share"
    )


def read_ran_with(path: Path) -> dict[str, RanServer]:
    """Every server FILE says was started, by planned name; refused (exit 2) when FILE is neither shape."""
    try:
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "pairs" in data:
            return _from_plan(data)
        spec = data.get("spec", data) if isinstance(data, dict) else None
        if isinstance(spec, dict) and isinstance(spec.get("servers"), dict):
            return _from_spec(spec)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError([Problem(f"--plan {path}", f"cannot be read: {exc}")]) from None
    raise UsageError(
        [
            Problem(
                f"--plan {path}",
                "is neither `colo plan --format json` output nor a GPU run's spec or records (with servers)",
            )
        ]
    )


def _pins(args: Sequence[str]) -> dict[str, Any]:
    values = flag_values(args)
    pins: dict[str, Any] = {"enforceEager": values.get("--enforce-eager") is True}
    for flag, key in PINNED_FLAGS.items():
        value = values.get(flag)
        if key == "enforceEager" or value is None or value is True:
            continue
        pins[key] = NUMBERS[key](value) if key in NUMBERS else value
    if isinstance(compilation := values.get("--compilation-config"), str):
        sizes = json.loads(compilation).get("cudagraph_capture_sizes")
        if sizes:
            pins["cudagraphCaptureSizes"] = list(sizes)
    return pins


def pinned_values(values: Mapping[str, Any], ran: Mapping[str, RanServer]) -> dict[str, Any]:
    """The stack's config values with every server that ran given the memory flags it ran with."""
    pinned = copy.deepcopy(dict(values))
    for pair in pinned.get("pairs") or []:
        for role in ("llm", "embedding", "reranker"):
            server = ran.get(f"{pair.get('name')}-{role}")
            if server is not None and isinstance(pair.get(role), dict):
                pair[role].update(_pins(server.args))
    return pinned


def differences(planned: Sequence[str], ran: Sequence[str]) -> list[str]:
    """Flags whose value differs between the pinned plan's arguments and what ran, in words."""
    now, then = flag_values(planned[1:]), flag_values(ran[1:])
    found = []
    for flag in sorted(now.keys() | then.keys()):
        if now.get(flag) != then.get(flag):
            ran_text = "absent" if flag not in then else ("set" if then[flag] is True else repr(then[flag]))
            plan_text = "absent" if flag not in now else ("set" if now[flag] is True else repr(now[flag]))
            found.append(f"{flag} ran {ran_text}, the plan now {plan_text}")
    return found
