"""Whether a vLLM release loads a checkpoint's config.json without running the repository's own code.

config_registry.yaml (written by scripts/extract-vllm-config-registry.py) lists the model types each release's
vllm/transformers_utils/config.py::get_config gives a config class of vLLM's own (`_CONFIG_REGISTRY`), and those
transformers registers itself (`CONFIG_MAPPING_NAMES`). Any other model type goes to transformers'
`AutoConfig.from_pretrained`, which refuses a config.json whose `auto_map` names an `AutoConfig` class unless
trust_remote_code is set (transformers' dynamic_module_utils.py::resolve_trust_remote_code).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from colo.catalog.data import parse_yaml
from colo.vllm.rules import newest_range_from, release_key

CONFIG_REGISTRY_FILE = "config_registry.yaml"


@dataclass(frozen=True)
class _Data:
    releases: tuple[str, ...]  # the releases read, oldest first
    # model type -> the runs (first, last) of releases that register it
    vllm: dict[str, tuple[tuple[str, str], ...]]
    transformers: frozenset[str]


@cache
def _data() -> _Data:
    raw = parse_yaml(resources.files("colo.vllm").joinpath(CONFIG_REGISTRY_FILE).read_text())
    vllm = {
        str(name): tuple((str(first), str(last)) for first, last in runs)
        for name, runs in (raw.get("vllm_config_registry") or {}).items()
    }
    return _Data(
        tuple(str(r) for r in raw["releases"]),
        vllm,
        frozenset(str(t) for t in raw["transformers_model_types"]),
    )


def vllm_registers_config(version: str, model_type: str) -> bool:
    """Whether vLLM `version`'s `_CONFIG_REGISTRY` has `model_type` (a release between two read ones counts
    as the one before it)."""
    data = _data()
    read = release_key(data.releases[newest_range_from(version, data.releases)])
    return any(
        release_key(first) <= read <= release_key(last) for first, last in data.vllm.get(model_type, ())
    )


def vllm_config_types(version: str) -> frozenset[str]:
    """Every model type vLLM `version`'s `_CONFIG_REGISTRY` has."""
    return frozenset(name for name in _data().vllm if vllm_registers_config(version, name))


def read_releases() -> tuple[str, ...]:
    """The releases whose `_CONFIG_REGISTRY` the table was read from, oldest first."""
    return _data().releases


def transformers_registers_config(model_type: str) -> bool:
    return model_type in _data().transformers


def config_needs_remote_code(version: str, model_type: str) -> bool:
    """Whether a config.json of this model_type whose auto_map names an AutoConfig class loads, in vLLM
    `version`, only with trust_remote_code: neither vLLM nor transformers has a config class for it."""
    return not vllm_registers_config(version, model_type) and not transformers_registers_config(model_type)
