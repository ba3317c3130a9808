"""vLLM release numbers in order: the one comparison every release-keyed table of colo uses."""

from __future__ import annotations

from functools import cache

from packaging.version import InvalidVersion, Version


@cache  # a few dozen release numbers, compared millions of times by the range lookups of one colo run
def release_key(version: str) -> tuple[int, ...]:
    """A release's number for ordering and range lookups; dev and rc builds count as the release they lead to.
    Every table keyed by release (the vLLM rules, quant_methods.yaml, the argument parser's spellings, the
    image catalog) orders its ranges with it, so versions are compared in this module alone."""
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise ValueError(f"'{version}' is not a vLLM release number; write it like 0.11.0") from None
    return tuple(parsed.release) + (0,) * (4 - len(parsed.release))
