"""What the Hugging Face Hub side of a plan is worth a look for: a gated model whose download the servers would
be refused without a token, a model read from the Hub at a revision that can move, and what a read fell back on."""

from __future__ import annotations

from collections.abc import Sequence

from colo.catalog.models import is_gated
from colo.config.schema import ServerSpec, StackConfig
from colo.errors import Problem
from colo.plan.pair import PairPlan
from colo.plan.server import Server


def _gated(path: str, model: str) -> Problem:
    return Problem(
        f"{path}.model",
        f"{model} is gated on the Hugging Face Hub and no colo:hfToken is set, so its download will be refused: "
        "accept its licence and run `pulumi config set --secret hfToken <token>`, or copy the weights from S3 "
        "with weightsUri",
    )


def _unpinned(path: str, model: str, commit: str | None) -> Problem:
    return Problem(
        f"{path}.revision",
        f"{model} was read from the Hub at main (commit {commit}), which can move: a later plan or a pod's start "
        f"may read another config. Pin it with `revision: {commit}` (or a tag) so the servers load what this plan "
        "sized",
    )


def _server_warnings(
    config: StackConfig, path: str, spec: ServerSpec, server: Server | None
) -> list[Problem]:
    """One server's: a gated model the servers would download without a token; for a Hub read, what it fell back
    on and whether its revision can move."""
    hub = server.source if server is not None and server.source.kind == "hub" else None
    downloads = not spec.weights_uri
    gated = is_gated(spec.model) or (server is not None and server.hub_gated)
    found = [_gated(path, spec.model)] if gated and downloads and not config.hf_token_set else []
    if hub is not None:
        found += [Problem(f"{path}.model", note) for note in hub.notes]
        if hub.revision is None and downloads:
            found.append(_unpinned(path, spec.model, hub.commit))
    return found


def hub_access_warnings(config: StackConfig, pairs: Sequence[PairPlan] = ()) -> list[Problem]:
    planned = {(pair.name, server.role): server for pair in pairs for server in pair.servers}
    return [
        warning
        for index, pair in enumerate(config.pairs)
        for role, spec in pair.servers()
        for warning in _server_warnings(
            config, f"colo:pairs[{index}].{role}", spec, planned.get((pair.name, role))
        )
    ]
