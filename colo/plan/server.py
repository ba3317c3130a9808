"""One server of a pair as the plan decides it: its model, image, flags, probe budget, requests and memory plan."""

from __future__ import annotations

from dataclasses import dataclass

from colo.plan.probes import ProbeBudget
from colo.roles import Role
from colo.vllm import ServerPlan


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

    @property
    def accepts_gpu_uuid(self) -> bool:
        """Whether this server's vLLM resolves CUDA_VISIBLE_DEVICES=GPU-<uuid>; older ones need an index."""
        return self.memory_plan.budget.spec.rules.uuid_in_cuda_visible_devices
