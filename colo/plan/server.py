"""One server of a pair as the plan decides it: its model, image, flags, probe budget, requests and memory plan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from colo.plan.compile_cache import CompileCache
from colo.plan.probes import ProbeBudget
from colo.roles import Role
from colo.vllm import ServerPlan


@dataclass(frozen=True)
class ModelSource:
    """Where a server's architecture was read: colo's catalog, the server's profile, or the Hub at a commit."""

    kind: Literal["catalog", "profile", "hub"]
    repo_id: str | None = None  # the Hub's spelling, for a Hub read
    revision: str | None = None  # as the stack pins it; None: main at plan time
    commit: str | None = None  # what the revision resolved to
    notes: tuple[str, ...] = ()  # what the read fell back on

    def describe(self) -> str:
        if self.kind != "hub":
            return self.kind
        pin = f"revision {self.revision}" if self.revision else "main, unpinned"
        return f"Hub {self.repo_id} at {self.commit} ({pin})"


@dataclass(frozen=True)
class Server:
    role: Role
    name: str  # Kubernetes-friendly: <pair>-<role>
    model: str
    image: str
    vllm_version: str
    port: int
    args: tuple[str, ...]
    probe: ProbeBudget
    cpu: str
    memory: str
    weights_uri: str | None
    memory_plan: ServerPlan
    env: tuple[tuple[str, str], ...] = ()  # environment variables the server's vLLM reads
    source: ModelSource = ModelSource("catalog")
    hub_gated: bool = False  # a Hub read found the repository gated
    compile_cache: CompileCache | None = (
        None  # where vLLM's compile cache lives (None: in the pod, unplanned)
    )

    @property
    def accepts_gpu_uuid(self) -> bool:
        """Whether this server's vLLM resolves CUDA_VISIBLE_DEVICES=GPU-<uuid>; older ones need an index."""
        return self.memory_plan.budget.spec.rules.uuid_in_cuda_visible_devices
