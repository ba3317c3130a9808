"""Text fields as `pulumi config set --path` leaves them.

With --path the CLI stores `true` and `false` as booleans and an integer without a leading zero as a
number; everything else stays a string (github.com/pulumi/pulumi sdk/go/common/resource/config
value.go::coerceObject). So `pulumi config set --path 'pairs[0].llm.cpu' 4` writes `cpu: 4`, and a
label value `true` arrives as a boolean. A field that holds text takes back exactly what was typed.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator


def typed_text(value: object) -> object:
    """The text a CLI-typed scalar was set from; anything else is left for the field's own check."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return value


CliText = Annotated[str, BeforeValidator(typed_text)]
