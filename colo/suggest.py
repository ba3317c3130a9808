""" "Did you mean ...?": the closest of the words colo knows to one it does not (a stack key, a GPU name)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence


def close_match(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to `word` (case-insensitive), if any is close enough to be a likely typo."""
    by_lower = {candidate.lower(): candidate for candidate in candidates}
    found = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.7)
    return by_lower[found[0]] if found else None


def unknown_word(what: str, word: str, candidates: Sequence[str]) -> str:
    """The refusal of an unknown `word`: "unknown key; did you mean maxModelLen?", else the known ones listed."""
    match = close_match(word, candidates)
    if match is not None:
        return f"unknown {what}; did you mean {match}?"
    return f"unknown {what}; known: {', '.join(candidates)}"
