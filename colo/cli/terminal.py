"""What the terminal colo prints to can show: its width, and whether it takes Unicode."""

from __future__ import annotations

import codecs
import shutil
import sys

MIN_WIDTH, MAX_WIDTH = 40, 160


def terminal_width() -> int:
    """The terminal's columns (COLUMNS when set, 100 when stdout is no terminal), kept readable."""
    columns = shutil.get_terminal_size(fallback=(100, 24)).columns
    return max(MIN_WIDTH, min(columns, MAX_WIDTH))


def unicode_output() -> bool:
    """Whether stdout's encoding is UTF-8; anything else (ASCII, a legacy code page) gets plain ASCII."""
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False
