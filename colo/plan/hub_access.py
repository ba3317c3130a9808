"""Servers that download a gated model from the Hugging Face Hub without a token would fail at start."""

from __future__ import annotations

from colo.catalog.models import is_gated
from colo.config.schema import StackConfig
from colo.errors import Problem


def hub_access_warnings(config: StackConfig) -> list[Problem]:
    warnings = []
    for index, pair in enumerate(config.pairs):
        for role, server in pair.servers():
            if server.weights_uri or config.hf_token_set or not is_gated(server.model):
                continue
            warnings.append(
                Problem(
                    f"colo:pairs[{index}].{role}.model",
                    f"{server.model} is gated on the Hugging Face Hub and no colo:hfToken is set, so its download "
                    f"will be refused: accept its licence and run `pulumi config set --secret hfToken <token>`, or "
                    f"copy the weights from S3 with weightsUri",
                )
            )
    return warnings
