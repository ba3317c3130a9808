"""The pooling a sentence-transformers checkpoint declares, as vLLM reads it (`get_pooling_config`: vllm 0.10.1
transformers_utils/config.py, the same lookup in 0.9.2 config.py's caller and in 0.22.0): modules.json names a
`sentence_transformers.models.Pooling` module, whose `<path>/config.json` sets `pooling_mode_*` keys true.

colo keeps every key set true, in the file's order, named as vLLM names it (`get_pooling_config_name`, 0.22.0
`parse_pooling_type`: strip `pooling_mode_`, keep what precedes the first `_`, `lasttoken` is LAST, upper-case):
the release decides which of them counts (colo.vllm.process.engine_limits.pooling_chunks).

From 0.30.0 (transformers_utils/config.py::get_pooling_config over _ST_POOLING_MODULE_TYPES; the same in 0.31.0 and
0.34.0) vLLM also takes the module type `sentence_transformers.sentence_transformer.modules.pooling.Pooling`, and a
`pooling_mode` key whose value is a string names the pooling by that value, in its place among the keys set true.
Earlier releases see no Pooling module of that type, and no pooling in such a key. colo reads both ways
(read_declared_pooling) and the release picks one (release_declared_pooling, rules.st_pooling_config).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from colo.vllm.checkpoint.architecture import ModelArchitecture
    from colo.vllm.rules import VllmRules

MODULES_FILE = "modules.json"
POOLING_MODULE = "sentence_transformers.models.Pooling"
# vllm 0.30.0+ transformers_utils/config.py::_ST_POOLING_MODULE_TYPES: the module types that name a Pooling module
POOLING_MODULES = (POOLING_MODULE, "sentence_transformers.sentence_transformer.modules.pooling.Pooling")
MODE_KEY = "pooling_mode"  # 0.30.0+ get_pooling_config: a string value names the pooling
# The pooling names vLLM knows (vllm 0.10.1-0.13.0 transformers_utils/config.py::get_pooling_config_name,
# supported_pooling_types; 0.14.0+ config/pooler.py SEQ_POOLING_TYPES and TOK_POOLING_TYPES together): what the
# release does with any other name is rules.unknown_pooling.
KNOWN_POOLING = ("LAST", "ALL", "CLS", "STEP", "MEAN")


def pooling_name(key: str) -> str:
    """vLLM's name for a pooling config key, or from 0.30.0 a string pooling_mode's value (0.22.0, 0.30.0
    transformers_utils/config.py::parse_pooling_type)."""
    name = key.replace("pooling_mode_", "") if "pooling_mode_" in key else key
    if "_" in name:
        name = name.split("_", 1)[0]
    if "lasttoken" in name:
        name = "last"
    return name.upper()


def pooling_config_file(modules: Any, types: tuple[str, ...] = (POOLING_MODULE,)) -> str | None:
    """The config.json of the first module of one of `types`, relative to the model's root; None where modules.json
    names none."""
    if not isinstance(modules, list):
        return None
    for item in modules:
        if isinstance(item, Mapping) and item.get("type") in types:
            return f"{item.get('path')}/config.json"
    return None


def declared_pooling(config: Any, *, mode_string: bool = False) -> tuple[str, ...]:
    """The names of the keys the Pooling module's config.json sets true, in the file's order; with `mode_string`
    (0.30.0+), a string `pooling_mode` key's value in its place too."""
    if not isinstance(config, Mapping):
        return ()
    names = []
    for key, value in config.items():
        if mode_string and key == MODE_KEY and isinstance(value, str):
            names.append(pooling_name(value))
        elif value is True:
            names.append(pooling_name(str(key)))
    return tuple(names)


class DeclaredPooling(NamedTuple):
    """A checkpoint's declared pooling as each kind of release reads it (None: no Pooling module)."""

    pooling: (
        tuple[str, ...] | None
    )  # keys set true of a sentence_transformers.models.Pooling module (to 0.29.0)
    # as 0.30.0+ read it (either module type, a string pooling_mode too), where that differs; None: the same
    mode_string: tuple[str, ...] | None


def read_declared_pooling(has: Callable[[str], bool], read: Callable[[str], Any]) -> DeclaredPooling:
    """The declared pooling of a checkpoint whose files `has` lists and `read` parses (JSON), both ways; each None
    where modules.json names no Pooling module of the types that reading knows, so vLLM takes the model class's
    default pooling. Each file is read once."""
    if not has(MODULES_FILE):
        return DeclaredPooling(None, None)
    modules = read(MODULES_FILE)
    configs: dict[str, Any] = {}

    def config(path: str) -> Any:
        if path not in configs:
            configs[path] = read(path) if has(path) else None
        return configs[path]

    older, newer = pooling_config_file(modules), pooling_config_file(modules, POOLING_MODULES)
    pooling = None if older is None else declared_pooling(config(older))
    mode_string = None if newer is None else declared_pooling(config(newer), mode_string=True)
    return DeclaredPooling(pooling, None if mode_string == pooling else mode_string)


def release_declared_pooling(arch: ModelArchitecture, rules: VllmRules) -> tuple[str, ...] | None:
    """The pooling `arch`'s checkpoint declares as the release reads it (rules.st_pooling_config); None where the
    release finds no Pooling module."""
    if rules.st_pooling_config == "mode_string" and arch.declared_pooling_mode_string is not None:
        return arch.declared_pooling_mode_string
    return arch.declared_pooling
