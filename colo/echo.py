"""How a value a user gave is quoted back in a message: control characters escaped, long values cut.

Standard library only: the weight-sync image uses it too.
"""

from __future__ import annotations

ECHO_LIMIT = 80
# A newline shown as \n, so that a message shows what is wrong with a value that looks right.
_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(32), 127)} | {9: "\\t", 10: "\\n", 13: "\\r"}


def shown(value: object) -> str:
    """`value` as text of at most ECHO_LIMIT characters (and "…"), control characters escaped."""
    text = str(value)
    cut = text if len(text) <= ECHO_LIMIT else text[:ECHO_LIMIT] + "…"
    return cut.translate(_ESCAPES)
