"""A model named by its Hugging Face id: colo's catalog entry where the catalog knows the id and no revision is
pinned, else the Hub's files at the revision. The catalog is the embedded default: a stack of catalog models plans
with no network and no cache."""

from __future__ import annotations

from collections.abc import Mapping

from colo.catalog.models import catalog_id
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.checkpoint.hub import HubError, HubModel, read_hub_model


def named_model(
    model_id: str,
    revision: str | None = None,
    *,
    token: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[ModelArchitecture, HubModel | None]:
    """The architecture, and the Hub read it came from (None: the catalog). HubError when the Hub refuses."""
    known = catalog_id(model_id)
    if known is not None and revision is None:
        return catalog_architecture(known), None
    try:
        hub = read_hub_model(model_id, revision, token=token, environ=environ)
    except HubError as exc:
        if known is not None or exc.about != "model":
            raise
        raise HubError(f"'{model_id}' is not in colo's model catalog, and {exc.args[0]}", exc.about) from None
    return hub.arch, hub
