"""The pooling a sentence-transformers checkpoint declares, as vLLM reads it (`get_pooling_config`: vllm 0.10.1
transformers_utils/config.py, the same lookup in 0.9.2 config.py's caller and in 0.22.0): modules.json names a
`sentence_transformers.models.Pooling` module, whose `<path>/config.json` sets `pooling_mode_*` keys true.

colo keeps every key set true, in the file's order, named as vLLM names it (`get_pooling_config_name`, 0.22.0
`parse_pooling_type`: strip `pooling_mode_`, keep what precedes the first `_`, `lasttoken` is LAST, upper-case):
the release decides which of them counts (colo.vllm.process.engine_limits.pooling_chunks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

MODULES_FILE = "modules.json"
POOLING_MODULE = "sentence_transformers.models.Pooling"
# The pooling names vLLM knows (vllm 0.10.1-0.13.0 transformers_utils/config.py::get_pooling_config_name,
# supported_pooling_types; 0.14.0+ config/pooler.py SEQ_POOLING_TYPES and TOK_POOLING_TYPES together): what the
# release does with any other name is rules.unknown_pooling.
KNOWN_POOLING = ("LAST", "ALL", "CLS", "STEP", "MEAN")


def pooling_name(key: str) -> str:
    """vLLM's name for a pooling config key (0.22.0 transformers_utils/config.py::parse_pooling_type)."""
    name = key.replace("pooling_mode_", "") if "pooling_mode_" in key else key
    if "_" in name:
        name = name.split("_", 1)[0]
    if "lasttoken" in name:
        name = "last"
    return name.upper()


def pooling_config_file(modules: Any) -> str | None:
    """The Pooling module's config.json, relative to the model's root; None where modules.json names none."""
    if not isinstance(modules, list):
        return None
    for item in modules:
        if isinstance(item, Mapping) and item.get("type") == POOLING_MODULE:
            return f"{item.get('path')}/config.json"
    return None


def declared_pooling(config: Any) -> tuple[str, ...]:
    """The names of the keys the Pooling module's config.json sets true, in the file's order."""
    if not isinstance(config, Mapping):
        return ()
    return tuple(pooling_name(str(key)) for key, value in config.items() if value is True)


def read_declared_pooling(has: Callable[[str], bool], read: Callable[[str], Any]) -> tuple[str, ...] | None:
    """The declared pooling of a checkpoint whose files `has` lists and `read` parses (JSON); None where it has no
    modules.json Pooling module, so vLLM takes the model class's default pooling."""
    if not has(MODULES_FILE):
        return None
    path = pooling_config_file(read(MODULES_FILE))
    if path is None:
        return None
    return declared_pooling(read(path)) if has(path) else ()
