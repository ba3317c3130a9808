"""The values transformers' config classes give keys a config.json leaves out (config_defaults.yaml).

vLLM builds its model from `AutoConfig.from_pretrained`, so a key the file omits has its class's default:
Gemma 3's configs, for one, name neither their heads nor their vocabulary. Reading such a file as it stands
would refuse it, or size it with a guess; filling it as transformers does sizes what vLLM sizes.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from colo.catalog.data import parse_yaml

DEFAULTS_FILE = Path(__file__).with_name("config_defaults.yaml")


@cache
def _table() -> dict[str, dict[str, Any]]:
    data: dict[str, Any] = parse_yaml(DEFAULTS_FILE.read_text())
    return {model_type: dict(entry["defaults"]) for model_type, entry in data.items()}


def class_defaults(model_type: Any) -> Mapping[str, Any]:
    """The defaults of the config class for `model_type`, or none where colo has not read that class."""
    return _table().get(model_type, {}) if isinstance(model_type, str) else {}


def with_class_defaults(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config as transformers would hold it: every omitted key that colo reads set to its class default.
    A key present in the file, even as null, is the file's (transformers passes null on as well)."""
    return {**class_defaults(config.get("model_type")), **config}
