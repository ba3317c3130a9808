"""Whether a vLLM release's model registry takes a config's architecture, and vLLM's own words when it does not.

architectures.yaml (written by scripts/extract-vllm-architectures.py from each release's registry.py) lists the
names each release registers by kind, the names it refuses with a message of their own, the messages, and how an
unregistered name reaches the Transformers backend. `architecture_refusal` turns that into the refusal of one
server, with colo's fix: the oldest release that registers the name, `trustRemoteCode` where that is what is
missing, or another model where the role does not fit the architecture. Release ranges are found with
colo.vllm.rules' helpers, the only place that compares versions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from colo.catalog.data import parse_yaml
from colo.vllm.config_registry import config_needs_remote_code
from colo.vllm.rules import at_least, newest_range_from, rules_for

ARCHITECTURES_FILE = "architectures.yaml"
KINDS = ("generate", "multimodal", "pooling", "speculative", "transformers", "backend", "pooling_only")
# Names a server can run: every kind but the speculative drafts, and pooling_only (a subset of pooling).
SERVABLE_KINDS = ("generate", "multimodal", "pooling", "transformers", "backend")
# transformers' AutoConfig says "requires you to execute the configuration file" (the words vLLM's get_config
# matches to raise its own message) before 4.52.0; from 4.52.0 `resolve_trust_remote_code` says this instead
# (transformers 4.51.3 and 4.52.0 src/transformers/dynamic_module_utils.py::resolve_trust_remote_code, read in
# the PyPI wheels), and vLLM passes it on as it is. The words quoted are those 4.52.0 to 5.16.1 share (4.52 puts
# the name in backticks; 4.56 adds where to inspect the code); the elision stands for what differs.
TRANSFORMERS_NEW_REMOTE_CODE_WORDING = "4.52.0"
TRANSFORMERS_REMOTE_CODE_ERROR = (
    "ValueError: The repository {model} contains custom code which must be executed to correctly load the model. "
    "[...] Please pass the argument `trust_remote_code=True` to allow custom code to be run."
)
Implementation = Literal["vllm", "transformers"]


class ArchitecturesFileError(Exception):
    """architectures.yaml does not have the shape this module reads; the message names the range."""


@dataclass(frozen=True)
class ArchitectureRefusal:
    key: str  # the stack key to change: "vllm.version", "model" or "trustRemoteCode"
    message: str


@dataclass(frozen=True)
class RegistryRange:
    first: str
    last: str
    source: str
    names: Mapping[str, frozenset[str]]  # kind -> architecture names

    def knows(self, architecture: str) -> bool:
        return any(architecture in self.names[kind] for kind in (*SERVABLE_KINDS, "speculative"))

    def servable(self, architecture: str) -> bool:
        return any(architecture in self.names[kind] for kind in SERVABLE_KINDS)

    @property
    def size(self) -> int:
        return len(frozenset().union(*self.names.values()))


@dataclass(frozen=True)
class ReleaseTexts:
    """One range's wording (templates with vLLM's placeholders), removed names and fallback rule."""

    wording: Mapping[str, str]
    previously_supported: Mapping[str, str]  # name -> last release that had it
    out_of_tree: Mapping[str, str]  # name -> plugin URL
    fallback: Mapping[str, Any]


@dataclass(frozen=True)
class _Data:
    registry: tuple[RegistryRange, ...]
    wording: tuple[Mapping[str, Any], ...]
    removed: tuple[Mapping[str, Any], ...]
    fallback: tuple[Mapping[str, Any], ...]
    wheel_only: Mapping[str, str]


def _names(entry: Mapping[str, Any], part: str) -> dict[str, set[str]]:
    table = entry.get(part) or {}
    unknown = set(table) - set(KINDS)
    if unknown:
        raise ArchitecturesFileError(
            f"{ARCHITECTURES_FILE}, {entry['first']}: unknown kind '{sorted(unknown)[0]}'"
        )
    return {kind: set(table.get(kind) or ()) for kind in KINDS}


def parse_architectures(data: Mapping[str, Any]) -> _Data:
    """Rebuild every range's full name sets from the first range's list and the later ranges' changes."""
    entries = data["registry"]
    first = entries[0]
    current = {kind: set(first.get(kind) or ()) for kind in KINDS}
    ranges = []
    for index, entry in enumerate(entries):
        if index:
            added, removed = _names(entry, "added"), _names(entry, "removed")
            for kind in KINDS:
                if removed[kind] - current[kind]:
                    name = sorted(removed[kind] - current[kind])[0]
                    raise ArchitecturesFileError(
                        f"{ARCHITECTURES_FILE}, {entry['first']}: removes unlisted {name}"
                    )
                current[kind] = (current[kind] - removed[kind]) | added[kind]
        names = {kind: frozenset(current[kind]) for kind in KINDS}
        ranges.append(RegistryRange(str(entry["first"]), str(entry["last"]), str(entry["source"]), names))
    return _Data(
        registry=tuple(ranges),
        wording=tuple(data["wording"]),
        removed=tuple(data.get("removed") or ()),
        fallback=tuple(data["fallback"]),
        wheel_only={str(k): str(v) for k, v in (data.get("wheel_only") or {}).items()},
    )


@cache
def _data() -> _Data:
    text = resources.files("colo.vllm").joinpath(ARCHITECTURES_FILE).read_text()
    return parse_architectures(parse_yaml(text))


def _in_range(version: str, entries: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    return entries[newest_range_from(version, [str(entry["first"]) for entry in entries])]


def registry_for(version: str) -> RegistryRange:
    """The registry of a mirrored release (ValueError outside colo's mirrored releases, as rules_for)."""
    rules_for(version)
    ranges = _data().registry
    return ranges[newest_range_from(version, [entry.first for entry in ranges])]


def texts_for(version: str) -> ReleaseTexts:
    data = _data()
    previously: dict[str, str] = {}
    out_of_tree: dict[str, str] = {}
    # "0" stands before every range, so a release older than the first removed range applies none of them
    applied = newest_range_from(version, ["0", *(str(entry["first"]) for entry in data.removed)])
    for entry in data.removed[:applied]:
        for name in entry.get("previously_supported_dropped") or ():
            previously.pop(name, None)
        for name in entry.get("out_of_tree_dropped") or ():
            out_of_tree.pop(name, None)
        previously.update({k: str(v) for k, v in (entry.get("previously_supported") or {}).items()})
        out_of_tree.update({k: str(v) for k, v in (entry.get("out_of_tree") or {}).items()})
    wording = {k: str(v) for k, v in _in_range(version, data.wording).items() if k not in ("first", "last")}
    return ReleaseTexts(wording, previously, out_of_tree, _in_range(version, data.fallback))


def wheel_only_releases() -> Mapping[str, str]:
    """Releases with no sdist on PyPI (0.15.x), and the release whose registry stands in for them."""
    return _data().wheel_only


def first_release_knowing(architecture: str) -> str | None:
    """The oldest mirrored release whose registry lets a server run `architecture`, or None."""
    return next((entry.first for entry in _data().registry if entry.servable(architecture)), None)


def releases_knowing(architecture: str) -> list[tuple[str, str]]:
    """The mirrored release windows (first, last) whose registry lets a server run `architecture`."""
    windows: list[tuple[str, str]] = []
    for entry in _data().registry:
        if not entry.servable(architecture):
            continue
        if windows and windows[-1][1] == _previous_last(entry):
            windows[-1] = (windows[-1][0], entry.last)
        else:
            windows.append((entry.first, entry.last))
    return windows


def _previous_last(entry: RegistryRange) -> str | None:
    ranges = _data().registry
    index = ranges.index(entry)
    return ranges[index - 1].last if index else None


def implementation(version: str, architecture: str) -> Implementation | None:
    """Who runs a registered name in this release: vLLM's own model code, or its Transformers backend
    (`_TRANSFORMERS_SUPPORTED_MODELS`, and the backend's own class names); None when it is not registered."""
    registry = registry_for(version)
    if any(
        architecture in registry.names[kind] for kind in ("generate", "multimodal", "pooling", "speculative")
    ):
        return "vllm"
    if architecture in registry.names["transformers"] or architecture in registry.names["backend"]:
        return "transformers"
    return None


# --------------------------------------------------------------------------- messages

_PLACEHOLDER = re.compile(r"\{([^{}]+?)(!r)?\}")


def render(template: str, values: Mapping[str, object]) -> str:
    """Fill a vLLM message template the way its f-string does (str() of the value, repr() for `!r`)."""

    def fill(match: re.Match[str]) -> str:
        name, conversion = match.group(1), match.group(2)
        if name not in values:
            raise KeyError(f"no value for {{{name}}} in {template!r}")
        value = values[name]
        return repr(value) if conversion else str(value)

    return _PLACEHOLDER.sub(fill, template)


def _values(
    architectures: Sequence[str], registry: RegistryRange, extra: Mapping[str, str]
) -> dict[str, object]:
    first = architectures[0]
    return {
        "architectures": list(architectures),
        "architectures[0]": first,
        "arch": first,
        "architecture": first,
        # vLLM prints its registry's dict_keys in full; colo elides the list and says how long it is
        "all_supported_archs": f"dict_keys([...]) ({registry.size} names in vLLM {registry.first}-{registry.last})",
        **extra,
    }


def _version_hint(architecture: str) -> tuple[str, str]:
    """The stack key and the fix for a name this release lacks: the releases that have it, or another model."""
    windows = releases_knowing(architecture)
    if not windows:
        return "model", (
            f"no vLLM release colo mirrors registers {architecture}; serve a model of a registered architecture"
        )
    spans = ", ".join(f"{first} to {last}" for first, last in windows)
    return (
        "vllm.version",
        f"pin a vLLM release that registers {architecture} ({spans}); the first is {windows[0][0]}",
    )


def _unregistered_message(version: str, architectures: Sequence[str], registry: RegistryRange) -> str:
    """What the release raises for a name it does not register, when the Transformers backend cannot take it."""
    texts = texts_for(version)
    wording = texts.wording
    for name in architectures:
        if name in texts.out_of_tree and "out_of_tree" in wording:
            return render(
                wording["out_of_tree"], _values([name], registry, {"plugin_url": texts.out_of_tree[name]})
            )
        if name in texts.previously_supported and "previously_supported" in wording:
            extra = {"previous_version": texts.previously_supported[name]}
            return render(wording["previously_supported"], _values([name], registry, extra))
    fallback = texts.fallback
    if fallback["stage"] == "loader":
        # Before 0.10.1 the registry hands an unregistered name to the Transformers backend and the loader
        # refuses it when transformers has no class of that name (and auto_map no AutoModel).
        template = wording.get("transformers_missing") or wording["transformers_incompatible_auto"]
        tried = "while loading the weights, its Transformers backend (model_impl auto) finds no compatible class: "
    else:
        template = wording["unsupported"]
        tried = f"its Transformers backend (model_impl auto) first looks for transformers' own {architectures[0]} class; without a compatible one: "
    return f"vLLM {version} does not register {architectures[0]}; {tried}{render(template, _values(architectures, registry, {}))}"


def _config_refused(version: str, model: str) -> str:
    """Who refuses the config without --trust-remote-code in this release, and in what words."""
    texts = texts_for(version)
    floor = str(texts.fallback.get("transformers_floor") or "0")
    if at_least(floor, TRANSFORMERS_NEW_REMOTE_CODE_WORDING):
        said = render(TRANSFORMERS_REMOTE_CODE_ERROR, {"model": model})
        who = f"transformers (>= {floor} with vLLM {version}) refuses the config and vLLM passes it on"
    else:
        said = texts.wording["remote_code"]
        who = f"vLLM {version} refuses the config (with transformers < {TRANSFORMERS_NEW_REMOTE_CODE_WORDING}; a newer one says: {render(TRANSFORMERS_REMOTE_CODE_ERROR, {'model': model})})"
    return f"{who}: {said}"


def _remote_code_message(version: str, architecture: str, model: str) -> str:
    return (
        f"{architecture} has no vLLM implementation in {version}; the config's auto_map names the repository's own "
        f"code, which runs only with --trust-remote-code: {_config_refused(version, model)}"
    )


def _remote_config_refusal(
    version: str, architecture: str, model_type: str, auto_config: bool, model: str
) -> ArchitectureRefusal | None:
    """The config itself needs the repository's code: vllm/transformers_utils/config.py::get_config gives a
    model_type outside vLLM's `_CONFIG_REGISTRY` to transformers' AutoConfig, which refuses a config.json whose
    auto_map names an AutoConfig class for a model_type transformers does not register (colo.vllm.config_registry).
    A config without model_type is left alone (from 0.34.0 get_config derives some from the architecture)."""
    if not auto_config or not model_type or not config_needs_remote_code(version, model_type):
        return None
    return ArchitectureRefusal(
        "trustRemoteCode",
        f"vLLM {version} registers {architecture}, but has no config class for config.json's model_type "
        f"'{model_type}' (not in its _CONFIG_REGISTRY, nor one transformers registers) and the config's auto_map "
        f"names the repository's own AutoConfig class, which runs only with --trust-remote-code: "
        f"{_config_refused(version, model)} [fix: trustRemoteCode: true if you trust the repository's code, "
        f"which defines the config class]",
    )


def _resolved(
    architectures: Sequence[str], registry: RegistryRange, fallback: Mapping[str, Any], pooling: bool
) -> tuple[str, str] | None:
    """The name the registry resolves (the first it knows, in config order), and how: "listed" or the role
    the suffix conversion gives it ("generate" / "pooling"); None when none resolves."""
    for name in architectures:
        if registry.knows(name):
            return name, "listed"
    rule = fallback.get("suffix_conversion", "none")
    for name in architectures:
        if rule == "seq_cls_to_causal_lm" and pooling and name.endswith("ForSequenceClassification"):
            base = name.replace("ForSequenceClassification", "ForCausalLM")
            if registry.servable(base):
                return base, "pooling"
        if rule == "suffix_table":
            table = [(str(suffix), str(runner)) for suffix, runner in fallback["suffix_defaults"]]
            match = next(((s, r) for s, r in table if name.endswith(s)), None)
            if match is None:
                continue
            for replacement, _runner in table:
                base = name.replace(match[0], replacement)
                if registry.servable(base):
                    return base, match[1]
    return None


def architecture_refusal(
    version: str,
    architectures: Sequence[str],
    *,
    has_auto_map: bool,
    trust_remote_code: bool,
    pooling: bool,
    model: str = "<model>",
    model_type: str = "",
    auto_config: bool = False,
) -> ArchitectureRefusal | None:
    """Why vLLM `version` would not serve a config whose `architectures` are these, or None when it would.

    `pooling` is the server's role (an embedding or reranking server, `--runner pooling` / `--task embed`);
    `has_auto_map` whether config.json has `auto_map` (the repository's own code); `model` the name vLLM is
    given, for transformers' message; `model_type` config.json's model_type and `auto_config` whether its auto_map
    names an AutoConfig class (the config itself is the repository's code). A name served by the Transformers
    backend (`implementation`) is taken.
    """
    registry = registry_for(version)
    if not architectures:
        return ArchitectureRefusal(
            "model",
            f"ValueError: No model architectures are specified (config.json of {model} has no architectures)",
        )
    texts = texts_for(version)
    resolved = _resolved(architectures, registry, texts.fallback, pooling)
    if resolved is None:
        if has_auto_map and not trust_remote_code:
            key, hint = _version_hint(architectures[0])
            fix = f"trustRemoteCode: true if you trust the repository's code, or {hint}"
            return ArchitectureRefusal(
                "trustRemoteCode", f"{_remote_code_message(version, architectures[0], model)} [fix: {fix}]"
            )
        if has_auto_map:
            return None  # vLLM runs the repository's own classes through its Transformers backend
        key, hint = _version_hint(architectures[0])
        return ArchitectureRefusal(
            key, f"{_unregistered_message(version, architectures, registry)} [fix: {hint}]"
        )
    name, how = resolved
    if not trust_remote_code:
        remote_config = _remote_config_refusal(version, name, model_type, auto_config, model)
        if remote_config is not None:
            return remote_config  # vLLM reads the config before it looks the architecture up
    if how == "listed" and not registry.servable(name):
        return ArchitectureRefusal(
            "model",
            f"vLLM {version} registers {name} only as a speculative-decoding draft "
            f"(_SPECULATIVE_DECODING_MODELS); it is not served on its own [fix: serve its target model and name "
            f"this one in speculative]",
        )
    pooling_only = name in registry.names["pooling_only"] or how == "pooling"
    if not pooling and pooling_only:
        return ArchitectureRefusal(
            "model",
            f"vLLM {version} registers {name} as a pooling model only: with no --runner (--task before 0.10.1) it "
            f"resolves the runner to pooling and the server answers no completions [fix: serve it as the "
            f"embedding or reranker, or pick a generative model for the LLM]",
        )
    return None
