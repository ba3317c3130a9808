"""The servers of a pair: one enum of roles, and one table of everything that differs by role.

Every other module reads roles from here; no other module spells a role's name. Members are declared in
the order a stack file lists a pair's servers (llm, embedding, reranker); `START_ORDER` is the order the
pod starts them in: the small servers first, then the LLM, which takes the GPU memory that is left.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    LLM = "llm"
    EMBEDDING = "embedding"
    RERANKER = "reranker"


@dataclass(frozen=True)
class RoleSpec:
    start_order: int  # position in the pod's start order
    port: int  # the server's --port, containerPort and Service port
    cpu: str  # CPU request when the server sets none
    memory: str  # memory request and limit when the server sets none
    pooling: bool  # served with `--runner pooling`, sized with the budget's embedding limits
    convert: str | None  # `--convert` for a pooling model served as something other than an embedder


# Default requests: the LLM process holds the tokenizer, detokenizer and pinned staging buffers; the small
# servers need far less. Both fit a 4-vCPU / 32 GiB single-GPU node (g6e.xlarge) with room for the kubelet.
ROLES: dict[Role, RoleSpec] = {
    Role.EMBEDDING: RoleSpec(start_order=0, port=8001, cpu="1", memory="6Gi", pooling=True, convert=None),
    Role.RERANKER: RoleSpec(
        start_order=1, port=8002, cpu="1", memory="6Gi", pooling=True, convert="classify"
    ),
    Role.LLM: RoleSpec(start_order=2, port=8000, cpu="2", memory="20Gi", pooling=False, convert=None),
}

START_ORDER: tuple[Role, ...] = tuple(sorted(Role, key=lambda role: ROLES[role].start_order))


def start_position(role: str) -> int:
    """Where a role (by name, as plan views carry it) starts; names colo does not know sort last."""
    try:
        return ROLES[Role(role)].start_order
    except ValueError:
        return len(ROLES)
