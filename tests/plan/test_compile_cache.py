"""vLLM's compile cache lives on the model volume, one directory per server, image and graph-shaping flags, so a
restart or a re-plan that only moves memory starts warm; the plan says what a cold first start costs."""

from __future__ import annotations

import copy

import pytest

from colo.config import parse_stack_config
from colo.plan.compile_cache import compile_cache, compile_cache_key, keyed_args
from colo.plan.stack import make_plan
from colo.stackfiles import load_stack

IMAGE = "vllm/vllm-openai:v0.22.0"
ARGS = ("Qwen/Qwen3-14B", "--port", "8000", "--gpu-memory-utilization", "0.81", "--max-num-seqs", "64")


def test_the_key_names_the_release_and_digests_the_image_and_flags() -> None:
    key = compile_cache_key("0.22.0", IMAGE, ARGS)
    assert key.startswith("v0.22.0-") and len(key.split("-", 1)[1]) == 12


@pytest.mark.parametrize(
    "moved",
    [
        ("--gpu-memory-utilization", "0.5"),
        ("--gpu-memory-utilization=0.5",),
        ("--kv-cache-memory-bytes", "1073741824"),
        ("--port", "9000"),
        ("--host", "127.0.0.1"),
    ],
)
def test_memory_sizes_and_the_http_frontend_do_not_move_the_key(moved: tuple[str, ...]) -> None:
    args = [a for a in ARGS if a not in ("--gpu-memory-utilization", "0.81")] + list(moved)
    assert compile_cache_key("0.22.0", IMAGE, args) == compile_cache_key("0.22.0", IMAGE, ARGS)


@pytest.mark.parametrize(
    ("version", "image", "args"),
    [
        ("0.34.0", IMAGE, ARGS),
        ("0.22.0", "registry.example/vllm:v0.22.0", ARGS),
        ("0.22.0", IMAGE, (*ARGS[:-1], "128")),
        ("0.22.0", IMAGE, (*ARGS, "--enforce-eager")),
    ],
)
def test_another_release_image_or_graph_shaping_flag_gets_another_directory(
    version: str, image: str, args: tuple[str, ...]
) -> None:
    assert compile_cache_key(version, image, args) != compile_cache_key("0.22.0", IMAGE, ARGS)


def test_keyed_args_drop_exactly_the_unkeyed_flags_and_their_values() -> None:
    assert keyed_args(ARGS) == ["Qwen/Qwen3-14B", "--max-num-seqs", "64"]


def test_a_writable_volume_holds_the_cache_under_the_pair_and_role() -> None:
    cache = compile_cache("chat", "llm", "0.22.0", IMAGE, ARGS, volume_writable=True)
    assert cache.sub_path == f".vllm-cache/chat-llm/{compile_cache_key('0.22.0', IMAGE, ARGS)}"
    assert cache.sub_path in cache.where and "starts warm" in cache.where


def test_a_read_only_volume_leaves_the_cache_in_the_pod_and_says_every_start_is_cold() -> None:
    cache = compile_cache("chat", "llm", "0.22.0", IMAGE, ARGS, volume_writable=False)
    assert cache.sub_path is None
    assert "ReadOnlyMany" in cache.where and "every start compiles cold" in cache.where


def test_every_planned_server_has_a_directory_of_its_own() -> None:
    plan = make_plan(parse_stack_config(load_stack("prod").values))
    paths = [
        server.compile_cache.sub_path
        for pair in plan.pairs
        for server in pair.servers
        if server.compile_cache
    ]
    assert len(paths) == sum(len(pair.servers) for pair in plan.pairs)
    assert len(set(paths)) == len(paths)


def test_a_read_only_model_volume_plans_no_directory() -> None:
    raw = copy.deepcopy(load_stack("local").values)
    raw["storage"] = {**raw.get("storage", {}), "accessMode": "ReadOnlyMany"}
    plan = make_plan(parse_stack_config(raw))
    caches = [server.compile_cache for pair in plan.pairs for server in pair.servers]
    assert caches and all(c is not None and c.sub_path is None for c in caches)
