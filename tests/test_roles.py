"""The role table: one start order, one port per role, and every part of colo reading the same table."""

from __future__ import annotations

from colo.config import parse_stack_config
from colo.plan.stack import make_plan
from colo.roles import ROLES, START_ORDER, Role, start_position
from colo.stackfiles import load_stack


def test_small_servers_start_first_and_the_llm_last() -> None:
    assert START_ORDER == (Role.EMBEDDING, Role.RERANKER, Role.LLM)


def test_every_role_listens_on_a_port_of_its_own() -> None:
    ports = [spec.port for spec in ROLES.values()]
    assert len(set(ports)) == len(ports) == len(Role)


def test_unknown_role_names_sort_after_every_known_one() -> None:
    assert sorted(["llm", "mystery", "embedding"], key=start_position) == ["embedding", "llm", "mystery"]


def test_planned_servers_take_start_order_port_and_default_requests_from_the_table() -> None:
    plan = make_plan(parse_stack_config(load_stack("dev").values))
    (pair,) = plan.pairs
    assert [server.role for server in pair.servers] == list(START_ORDER)
    for server in pair.servers:
        spec = ROLES[server.role]
        assert server.port == spec.port
        assert server.args[server.args.index("--port") + 1] == str(spec.port)
        assert (server.cpu, server.memory) == (spec.cpu, spec.memory)
