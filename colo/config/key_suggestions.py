"""The keys a stack file may write at one place, for "did you mean ...?" (colo.suggest) after an unknown key.

The keys come from the pydantic models themselves (their camelCase aliases), walked along the error's
location, so a suggestion never names a key the schema would refuse.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation may hold: itself, inside Optional/Union/Annotated, a list's items."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = get_origin(annotation)
    if origin is Annotated:
        return _models_in(get_args(annotation)[0])
    if origin in (Union, types.UnionType, list, tuple):
        return [model for arg in get_args(annotation) for model in _models_in(arg)]
    return []


def _keys(model: type[BaseModel]) -> dict[str, str]:
    """Every key a stack file may write for the model's fields (alias and name) -> the field's name."""
    keys: dict[str, str] = {}
    for name, field in model.model_fields.items():
        keys[name] = name
        if field.alias:
            keys[field.alias] = name
    return keys


def known_keys(root: type[BaseModel], parent: Sequence[int | str]) -> list[str]:
    """The keys (camelCase, as a stack file writes them) of the model at `parent`, a pydantic error location."""
    models: list[type[BaseModel]] = [root]
    for part in parent:
        if isinstance(part, int):
            continue  # a list index: the same item model
        found: list[type[BaseModel]] = []
        for model in models:
            name = _keys(model).get(part)
            if name is not None:
                found += _models_in(model.model_fields[name].annotation)
        models = found
    return sorted({field.alias or name for model in models for name, field in model.model_fields.items()})
