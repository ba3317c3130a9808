#!/usr/bin/env python3
"""Extract the model architectures each mirrored vLLM release knows, and its refusal wording, into architectures.yaml.

For every vLLM release colo mirrors (the span of colo/vllm/rules.yaml, or up to `--through` while a new
release is being added, before its rules exist), the release's sdist is downloaded from
PyPI into a temporary directory (sha256 checked against the index), only the few source files read here are
unpacked from it, and those files are parsed with `ast`: vLLM is never imported or run. Read per release:

- vllm/model_executor/models/registry.py: the registry dicts (`_TEXT_GENERATION_MODELS`, `_EMBEDDING_MODELS`,
  ... whatever the release has), `_PREVIOUSLY_SUPPORTED_MODELS`, `_OOT_SUPPORTED_MODELS`, and the messages of
  `_ModelRegistry._raise_for_unsupported` and `_try_resolve_transformers`;
- vllm/model_executor/model_loader/utils.py: the Transformers-backend fallback of the releases that resolve it
  while loading (`resolve_transformers_fallback` / `resolve_transformers_arch`) and their messages;
- vllm/config.py or vllm/config/*.py: `ModelImpl`, the `model_impl` default, `_SUFFIX_TO_DEFAULTS`;
- vllm/transformers_utils/config.py: vLLM's message for a config that needs `--trust-remote-code`;
- requirements/common.txt: the transformers floor the release declares.

Usage (from the repository root, with the project's virtual environment):
    python scripts/extract-vllm-architectures.py            # rewrite colo/vllm/architectures.yaml
    python scripts/extract-vllm-architectures.py --check    # exit 1 when the committed file differs
    python scripts/extract-vllm-architectures.py --sdist-dir DIR   # reuse (and keep) sdists in DIR
    python scripts/extract-vllm-architectures.py --through 0.34.0  # read past rules.yaml's newest release
Nothing downloaded is written inside the repository.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import itertools
import json
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from colo.vllm.rules import release_key  # noqa: E402  (the repository's own version ordering)

INDEX_URL = "https://pypi.org/simple/vllm/"
RULES_FILE = REPO_ROOT / "colo" / "vllm" / "rules.yaml"
OUT_FILE = REPO_ROOT / "colo" / "vllm" / "architectures.yaml"

REGISTRY = "vllm/model_executor/models/registry.py"
LOADER = "vllm/model_executor/model_loader/utils.py"
HF_CONFIG = "vllm/transformers_utils/config.py"
WANTED = (REGISTRY, LOADER, HF_CONFIG, "vllm/config.py", "vllm/config/*.py", "requirements/common.txt")

# Registry dict name -> the kind colo records it under. A dict a release has that is not listed here stops the
# extraction: a new dict must be classified by a person, not guessed.
DICT_KINDS = {
    "_TEXT_GENERATION_MODELS": "generate",
    "_MULTIMODAL_MODELS": "multimodal",
    "_EMBEDDING_MODELS": "pooling",
    "_CROSS_ENCODER_MODELS": "pooling",
    "_REWARD_MODELS": "pooling",
    "_SEQUENCE_CLASSIFICATION_MODELS": "pooling",
    "_TOKEN_CLASSIFICATION_MODELS": "pooling",
    "_LATE_INTERACTION_MODELS": "pooling",
    "_SPECULATIVE_DECODING_MODELS": "speculative",
    "_TRANSFORMERS_SUPPORTED_MODELS": "transformers",
    "_FALLBACK_MODEL": "backend",
    "_TRANSFORMERS_MODELS": "backend",
    "_TRANSFORMERS_BACKEND_MODELS": "backend",
}
NOT_REGISTRY_DICTS = {"_VLLM_MODELS", "_PREVIOUSLY_SUPPORTED_MODELS", "_OOT_SUPPORTED_MODELS"}
KINDS = ("generate", "multimodal", "pooling", "speculative", "transformers", "backend", "pooling_only")
# Kinds whose classes generate text: a pooling-dict name that maps to one of their classes can serve an LLM.
GENERATIVE_KINDS = ("generate", "multimodal", "transformers")


class ExtractionError(Exception):
    """A release's source does not have the shape this script reads; the message names release and symbol."""


# --------------------------------------------------------------------------- PyPI


@dataclass(frozen=True)
class Sdist:
    version: str
    filename: str
    url: str
    sha256: str


def pypi_files() -> list[dict[str, Any]]:
    request = urllib.request.Request(INDEX_URL, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        files: list[dict[str, Any]] = json.load(answer)["files"]
    return files


def final_release(text: str) -> bool:
    return all(part.isdigit() or part.startswith("post") for part in text.split("."))


def mirrored_span(through: str | None = None) -> tuple[str, str]:
    """rules.yaml's first and last release; `through` moves the end to a newer release being added."""
    ranges = yaml.safe_load(RULES_FILE.read_text())["releases"]
    first, last = str(ranges[0]["first"]), str(ranges[-1]["last"])
    if through is not None and release_key(through) > release_key(last):
        last = through
    return first, last


def releases_in_span(
    files: Iterable[Mapping[str, Any]], through: str | None = None
) -> tuple[list[Sdist], list[str]]:
    """The span's sdists, oldest first, and the span's releases that publish wheels only."""
    first, last = mirrored_span(through)
    low, high = release_key(first), release_key(last)
    sdists: dict[str, Sdist] = {}
    wheels: set[str] = set()
    for entry in files:
        name = entry["filename"]
        if entry.get("yanked"):
            continue
        if name.endswith(".tar.gz"):
            version = name[len("vllm-") : -len(".tar.gz")]
            if final_release(version) and low <= release_key(version) <= high:
                sdists[version] = Sdist(version, name, entry["url"], entry["hashes"]["sha256"])
        elif name.endswith(".whl"):
            version = name.split("-")[1]
            if final_release(version) and low <= release_key(version) <= high:
                wheels.add(version)
    ordered = sorted(sdists.values(), key=lambda s: order(s.version))
    return ordered, sorted(wheels - set(sdists), key=order)


def order(version: str) -> tuple[tuple[int, ...], str]:
    """release_key ranks 0.8.5.post1 with 0.8.5 (colo's ranges do); the text breaks the tie for listing."""
    return release_key(version), version


def fetch_sdist(sdist: Sdist, directory: Path) -> Path:
    target = directory / sdist.filename
    if not (target.exists() and sha256_of(target) == sdist.sha256):
        subprocess.run(["curl", "-sSfL", "--retry", "3", "-o", str(target), sdist.url], check=True)
    if sha256_of(target) != sdist.sha256:
        raise ExtractionError(f"{sdist.filename}: sha256 differs from the index")
    return target


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def unpack(archive: Path, into: Path) -> Path:
    """Only the files read here; a pattern the release lacks (vllm/config/ before 0.10.1) is not an error."""
    into.mkdir(parents=True, exist_ok=True)
    patterns = [f"*/{pattern}" for pattern in WANTED]
    subprocess.run(
        ["tar", "-xzf", str(archive), "-C", str(into), "--strip-components=1", "--wildcards", *patterns],
        check=False,
        stderr=subprocess.DEVNULL,
    )
    if not (into / REGISTRY).exists():
        raise ExtractionError(f"{archive.name}: no {REGISTRY}")
    return into


# --------------------------------------------------------------------------- AST reading

SAFE_NODES = (
    ast.Expression, ast.Dict, ast.DictComp, ast.comprehension, ast.Tuple, ast.List, ast.Constant, ast.Name,
    ast.Load, ast.Store, ast.Attribute, ast.Call, ast.Compare, ast.Eq, ast.NotEq, ast.In, ast.NotIn,
    ast.BoolOp, ast.And, ast.Or,
)  # fmt: skip


def evaluate(node: ast.expr, names: Mapping[str, Any], where: str) -> Any:
    """A registry dict's value: literals, `**other_dict` and the dict comprehensions vLLM writes over earlier
    dicts. Any other node (a call other than `.items()`, an import, an attribute other than items) is refused."""
    for child in ast.walk(node):
        if not isinstance(child, SAFE_NODES):
            raise ExtractionError(f"{where}: cannot read {type(child).__name__} at line {child.lineno}")  # type: ignore[attr-defined]
        if isinstance(child, ast.Attribute) and child.attr != "items":
            raise ExtractionError(f"{where}: attribute .{child.attr} at line {child.lineno}")
        if isinstance(child, ast.Call) and not (isinstance(child.func, ast.Attribute) and not child.args):
            raise ExtractionError(f"{where}: call at line {child.lineno}")
    code = compile(ast.Expression(node), where, "eval")
    return eval(code, {"__builtins__": {}}, dict(names))  # only the whitelisted nodes above reach here


def module_assignments(tree: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            yield node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            yield node.target.id, node.value


def functions(tree: ast.AST) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}


def methods(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef]]:
    """Module functions ("", f) and class methods ("Class.", f), in source order."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield "", node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    yield f"{node.name}.", item


def template(node: ast.expr) -> str | None:
    """A message as vLLM builds it, placeholders named by their expression: f"{arch} ..." -> "{arch} ..."."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                conversion = "!r" if value.conversion == ord("r") else ""
                parts.append("{" + ast.unparse(value.value) + conversion + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = template(node.left), template(node.right)
        return None if left is None or right is None else left + right
    return None


def raised_messages(function: ast.FunctionDef) -> list[str]:
    """The messages of every `raise X(...)` in a function, and of strings assigned to a local before raising."""
    messages = []
    local_strings: dict[str, str] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            text = template(node.value)
            if text is not None:
                local_strings[node.targets[0].id] = text
    for node in ast.walk(function):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            argument = node.exc.args[0]
            exception = ast.unparse(node.exc.func)
            text = template(argument)
            if text is None and isinstance(argument, ast.Name):
                text = local_strings.get(argument.id)
            if text is not None:
                messages.append(f"{exception}: {text}")
    return messages


def one_message(function: ast.FunctionDef | None, marker: str, where: str) -> str | None:
    if function is None:
        return None
    found = [message for message in raised_messages(function) if marker in message]
    if len(found) > 1:
        raise ExtractionError(f"{where}: {len(found)} messages hold {marker!r}")
    return found[0] if found else None


# --------------------------------------------------------------------------- one release


@dataclass
class Release:
    version: str
    dicts: dict[str, dict[str, str]] = field(default_factory=dict)  # dict name -> arch -> "module:Class"
    kinds: dict[str, list[str]] = field(default_factory=dict)
    previously_supported: dict[str, str] = field(default_factory=dict)
    out_of_tree: dict[str, str] = field(default_factory=dict)
    wording: dict[str, str] = field(default_factory=dict)
    fallback: dict[str, Any] = field(default_factory=dict)
    transformers_floor: str | None = None


def read_registry(release: Release, root: Path) -> ast.Module:
    path = root / REGISTRY
    tree = ast.parse(path.read_text())
    names: dict[str, Any] = {}
    for name, value in module_assignments(tree):
        if not (name.startswith("_") and name.endswith(("_MODELS", "_MODEL"))):
            continue
        where = f"vllm {release.version} {REGISTRY}::{name}"
        names[name] = evaluate(value, names, where)
        if name in NOT_REGISTRY_DICTS:
            continue
        if name not in DICT_KINDS:
            raise ExtractionError(f"{where}: a registry dict this script does not classify")
        release.dicts[name] = {arch: f"{target[0]}:{target[1]}" for arch, target in names[name].items()}
    release.previously_supported = dict(names.get("_PREVIOUSLY_SUPPORTED_MODELS", {}))
    release.out_of_tree = dict(names.get("_OOT_SUPPORTED_MODELS", {}))
    merged = names.get("_VLLM_MODELS")
    if merged is None or set(merged) != {arch for table in release.dicts.values() for arch in table}:
        raise ExtractionError(
            f"vllm {release.version} {REGISTRY}::_VLLM_MODELS is not the union of the dicts"
        )
    release.kinds = classify(release.dicts, {arch: f"{t[0]}:{t[1]}" for arch, t in merged.items()})
    return tree


def classify(dicts: Mapping[str, Mapping[str, str]], merged: Mapping[str, str]) -> dict[str, list[str]]:
    """Names by kind. `pooling_only`: a pooling name whose class (after `_VLLM_MODELS`' merge, later dicts
    winning) generates for no generative name: vLLM resolves `--runner auto` / `--task auto` to pooling."""
    kinds: dict[str, set[str]] = {kind: set() for kind in KINDS}
    for name, table in dicts.items():
        kinds[DICT_KINDS[name]].update(table)
    generative_classes = {
        target
        for name, table in dicts.items()
        if DICT_KINDS[name] in GENERATIVE_KINDS
        for target in table.values()
    }
    generative_names = set().union(*(kinds[kind] for kind in GENERATIVE_KINDS))
    kinds["pooling_only"] = {
        arch
        for arch in kinds["pooling"]
        if arch not in generative_names and merged[arch] not in generative_classes
    }
    return {kind: sorted(names) for kind, names in kinds.items()}


def read_wording(release: Release, registry: ast.Module, root: Path) -> None:
    v = release.version
    registry_functions = functions(registry)
    raise_for = registry_functions.get("_raise_for_unsupported")
    where = f"vllm {v} {REGISTRY}::_ModelRegistry._raise_for_unsupported"
    wording = {
        "unsupported": one_message(raise_for, "are not supported for now", where),
        "previously_supported": one_message(raise_for, "was supported in vLLM until", where),
        "out_of_tree": one_message(raise_for, "is not supported in-tree anymore", where),
    }
    wording_sources = {key: where for key, text in wording.items() if text}
    loader_path = root / LOADER
    loader = functions(ast.parse(loader_path.read_text())) if loader_path.exists() else {}
    resolver_name = next(
        (n for n in ("resolve_transformers_fallback", "resolve_transformers_arch") if n in loader), None
    )
    registry_resolver = registry_functions.get("_try_resolve_transformers")
    if resolver_name is not None:
        stage, resolver, resolver_where = (
            "loader",
            loader[resolver_name],
            f"vllm {v} {LOADER}::{resolver_name}",
        )
    elif registry_resolver is not None:
        stage, resolver, resolver_where = (
            "registry",
            registry_resolver,
            f"vllm {v} {REGISTRY}::_ModelRegistry._try_resolve_transformers",
        )
    else:
        raise ExtractionError(f"vllm {v}: no Transformers-backend resolver in {LOADER} or {REGISTRY}")
    for key, marker in (
        ("transformers_missing", "Cannot find model module"),
        ("transformers_incompatible_auto", "has no vLLM implementation and the Transformers"),
        ("transformers_incompatible", "is not compatible with vLLM."),
    ):
        text = one_message(resolver, marker, resolver_where) if key != "transformers_incompatible" else None
        if key == "transformers_incompatible":
            found = [
                m for m in raised_messages(resolver) if marker in m and "has no vLLM implementation" not in m
            ]
            text = found[0] if found else None
        if text:
            wording[key] = text
            wording_sources[key] = resolver_where
    if wording.get("previously_supported") is None and "get_model_architecture" in loader:
        where_loader = f"vllm {v} {LOADER}::get_model_architecture"
        text = one_message(loader["get_model_architecture"], "was supported", where_loader)
        if text:
            wording["previously_supported"] = text
            wording_sources["previously_supported"] = where_loader
    hf_tree = ast.parse((root / HF_CONFIG).read_text())
    for owner, method in methods(hf_tree):  # HFConfigParser.parse from 0.10.2, get_config before
        text = next((m for m in raised_messages(method) if "Failed to load the model config" in m), None)
        if text:
            wording["remote_code"] = text
            wording_sources["remote_code"] = f"vllm {v} {HF_CONFIG}::{owner}{method.name}"
            break
    if wording.get("unsupported") is None or wording.get("remote_code") is None:
        raise ExtractionError(f"vllm {v}: the unsupported-architecture or remote-code message was not found")
    release.wording = {key: text for key, text in wording.items() if text}
    release.wording["source"] = "; ".join(sorted(set(wording_sources.values())))
    release.fallback = {"stage": stage, "source": resolver_where}
    fallback_conditions(release, resolver, registry_functions, loader)


def fallback_conditions(
    release: Release,
    resolver: ast.FunctionDef,
    registry_functions: Mapping[str, ast.FunctionDef],
    loader: Mapping[str, ast.FunctionDef],
) -> None:
    """What the Transformers backend needs in this release, read from the resolver's own calls and names."""
    called = {
        node.func.id
        for node in ast.walk(resolver)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    text = "\n".join(
        [ast.unparse(resolver), *(ast.unparse(loader[name]) for name in sorted(called) if name in loader)]
    )
    fallback = release.fallback
    checks = [
        name
        for name in ("is_backend_compatible", "_can_set_attn_implementation", "_supports_flex_attn")
        if name in text
    ]
    fallback["class_check"] = checks
    fallback["remote_class_from_auto_map"] = "get_class_from_dynamic_module" in text
    normalize = registry_functions.get("_normalize_archs") or registry_functions.get("_normalize_arch")
    normalize_text = ast.unparse(normalize) if normalize is not None else ""
    if "try_match_architecture_defaults" in normalize_text:
        fallback["suffix_conversion"] = "suffix_table"
    elif "ForSequenceClassification" in normalize_text:
        fallback["suffix_conversion"] = "seq_cls_to_causal_lm"
    else:
        fallback["suffix_conversion"] = "none"


def read_config(release: Release, root: Path) -> None:
    files = [root / "vllm" / "config.py", *sorted((root / "vllm" / "config").glob("*.py"))]
    impl_values: list[str] | None = None
    suffixes: list[list[str]] | None = None
    for path in files:
        if not path.exists():
            continue
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == "ModelImpl":
                impl_values = [
                    str(item.value.value)
                    for item in node.body
                    if isinstance(item, ast.Assign) and isinstance(item.value, ast.Constant)
                ]
        for name, value in module_assignments(tree):
            if name == "ModelImpl" and isinstance(value, ast.Subscript):
                impl_values = [
                    str(element.value)
                    for element in ast.walk(value.slice)
                    if isinstance(element, ast.Constant)
                ]
            if name == "_SUFFIX_TO_DEFAULTS":
                suffixes = [[suffix, runner] for suffix, (runner, _convert) in ast.literal_eval(value)]
    if impl_values is None:
        raise ExtractionError(f"vllm {release.version}: no ModelImpl in vllm/config")
    release.fallback["model_impl"] = impl_values
    if release.fallback["suffix_conversion"] == "suffix_table":
        if suffixes is None:
            raise ExtractionError(f"vllm {release.version}: suffix conversion without _SUFFIX_TO_DEFAULTS")
        release.fallback["suffix_defaults"] = suffixes


def read_requirements(release: Release, root: Path) -> None:
    path = root / "requirements" / "common.txt"
    for line in path.read_text().splitlines() if path.exists() else []:
        if line.startswith("transformers"):
            floor = line.split(">=")[1].split(",")[0].split("#")[0].strip()
            release.transformers_floor = floor


def extract(sdist: Sdist, archive: Path, scratch: Path) -> Release:
    root = unpack(archive, scratch / sdist.version)
    release = Release(sdist.version)
    registry = read_registry(release, root)
    read_wording(release, registry, root)
    read_config(release, root)
    read_requirements(release, root)
    return release


# --------------------------------------------------------------------------- the data file


def ranges(releases: list[Release], key: Any) -> list[tuple[Release, Release]]:
    """Consecutive releases with the same value of `key(release)`, as (first, last)."""
    grouped: list[tuple[Release, Release]] = []
    for release in releases:
        if grouped and key(grouped[-1][0]) == key(release):
            grouped[-1] = (grouped[-1][0], release)
        else:
            grouped.append((release, release))
    return grouped


def registry_source(release: Release, names: Iterable[str]) -> str:
    return f"vllm {release.version} {REGISTRY}::" + ", ".join(names)


def registry_section(releases: list[Release]) -> list[dict[str, Any]]:
    groups = ranges(releases, lambda r: r.kinds)
    first, last = groups[0]
    section: list[dict[str, Any]] = [
        {"first": first.version, "last": last.version, "source": registry_source(first, first.dicts),
         **{kind: first.kinds[kind] for kind in KINDS}}
    ]  # fmt: skip
    previous = first
    for start, end in groups[1:]:
        entry: dict[str, Any] = {"first": start.version, "last": end.version}
        changed_dicts = [
            name
            for name in sorted(set(start.dicts) | set(previous.dicts))
            if start.dicts.get(name, {}).keys() != previous.dicts.get(name, {}).keys()
        ]
        entry["source"] = registry_source(start, changed_dicts or ["_VLLM_MODELS"])
        added = {k: sorted(set(start.kinds[k]) - set(previous.kinds[k])) for k in KINDS}
        removed = {k: sorted(set(previous.kinds[k]) - set(start.kinds[k])) for k in KINDS}
        entry["added"] = {k: v for k, v in added.items() if v}
        entry["removed"] = {k: v for k, v in removed.items() if v}
        section.append({k: v for k, v in entry.items() if v != {}})
        previous = start
    return section


def removed_section(releases: list[Release], key: Any) -> list[dict[str, Any]]:
    """Names the registry refuses with a message of their own; each range states what changed."""
    section: list[dict[str, Any]] = []
    before: dict[str, dict[str, str]] = {"previously_supported": {}, "out_of_tree": {}}
    for start, end in ranges(releases, key):
        now = {"previously_supported": start.previously_supported, "out_of_tree": start.out_of_tree}
        entry: dict[str, Any] = {
            "first": start.version,
            "last": end.version,
            "source": f"vllm {start.version} {REGISTRY}::"
            + ", ".join(
                n
                for n, d in (
                    ("_PREVIOUSLY_SUPPORTED_MODELS", now["previously_supported"]),
                    ("_OOT_SUPPORTED_MODELS", now["out_of_tree"]),
                )
                if d
            ),
        }
        for part in ("previously_supported", "out_of_tree"):
            changed = {k: v for k, v in sorted(now[part].items()) if before[part].get(k) != v}
            dropped = sorted(set(before[part]) - set(now[part]))
            if changed:
                entry[part] = changed
            if dropped:
                entry[f"{part}_dropped"] = dropped
        if len(entry) > 3 or section:
            section.append(entry)
        before = {part: dict(values) for part, values in now.items()}
    return section


def simple_section(releases: list[Release], key: Any, render: Any) -> list[dict[str, Any]]:
    return [
        {"first": start.version, "last": end.version, **render(start)} for start, end in ranges(releases, key)
    ]


def same_key_same_data(releases: list[Release]) -> None:
    """colo looks ranges up by release_key, which cannot tell 0.8.5 from 0.8.5.post1: such releases must agree."""
    for earlier, later in itertools.pairwise(releases):
        if release_key(earlier.version) != release_key(later.version):
            continue
        for part in (
            "kinds",
            "wording",
            "fallback",
            "previously_supported",
            "out_of_tree",
            "transformers_floor",
        ):
            a, b = getattr(earlier, part), getattr(later, part)
            if part in ("wording", "fallback"):
                a, b = (
                    {k: v for k, v in a.items() if k != "source"},
                    {k: v for k, v in b.items() if k != "source"},
                )
            if a != b:
                raise ExtractionError(f"vllm {earlier.version} and {later.version} differ in {part}")


def document(releases: list[Release], wheel_only: list[str], sdists: list[Sdist]) -> dict[str, Any]:
    same_key_same_data(releases)

    def wording(release: Release) -> dict[str, Any]:
        return dict(release.wording)

    def fallback(release: Release) -> dict[str, Any]:
        return {**release.fallback, "transformers_floor": release.transformers_floor}

    def fallback_key(release: Release) -> Any:
        return json.dumps(fallback(release) | {"source": None}, sort_keys=True)

    def wording_key(release: Release) -> Any:
        return json.dumps(release.wording | {"source": None}, sort_keys=True)

    def removed_key(release: Release) -> Any:
        return json.dumps([release.previously_supported, release.out_of_tree], sort_keys=True)

    return {
        "wheel_only": {version: neighbour(version, releases) for version in wheel_only},
        "sdists": {s.version: s.sha256 for s in sdists},
        "registry": registry_section(releases),
        "removed": removed_section(releases, removed_key),
        "wording": simple_section(releases, wording_key, wording),
        "fallback": simple_section(releases, fallback_key, fallback),
    }


def neighbour(version: str, releases: list[Release]) -> str:
    """The release a wheel-only release is read as: the newest one before it (the rule colo's rules.yaml
    follows for a release between two ranges)."""
    earlier = [r.version for r in releases if release_key(r.version) < release_key(version)]
    return earlier[-1]


HEADER = """\
# The model architectures each mirrored vLLM release registers, and what it says when it refuses one.
# Generated by scripts/extract-vllm-architectures.py from the releases' PyPI sdists (sha256 under sdists:), by
# reading their Python sources with `ast` (vLLM is never imported); the paths are the same relative paths as
# github.com/vllm-project/vllm at each release tag. Do not edit by hand: rerun the script (--check verifies).
#
# registry: the first range lists every name by kind; each later range lists only what it added or removed.
#   generate / multimodal / pooling / speculative / transformers: the registry dict a name is in
#   (_TEXT_GENERATION_MODELS; _MULTIMODAL_MODELS; _EMBEDDING_MODELS, _CROSS_ENCODER_MODELS, _REWARD_MODELS,
#   _SEQUENCE_CLASSIFICATION_MODELS, _TOKEN_CLASSIFICATION_MODELS, _LATE_INTERACTION_MODELS;
#   _SPECULATIVE_DECODING_MODELS; _TRANSFORMERS_SUPPORTED_MODELS: served by vLLM's Transformers backend);
#   backend: the Transformers backend's own classes; pooling_only: pooling names whose class generates for no
#   generative name, so `--runner auto` (`--task auto` before 0.10.1) starts them as pooling models.
# removed: _PREVIOUSLY_SUPPORTED_MODELS (name -> last release) and _OOT_SUPPORTED_MODELS (name -> plugin).
# wording: the messages, with vLLM's own placeholders, that each range raises (ExceptionType: text).
# fallback: how an architecture the registry lacks reaches the Transformers backend (stage: loader, resolved
#   while loading the weights, or registry, resolved when the config is read), what the class must pass
#   (class_check), the model_impl values, the suffix conversion (_normalize_arch) and the transformers floor
#   of requirements/common.txt.
# wheel_only: releases in the span with no sdist on PyPI, read as the release named (the one before them).
"""


class Flow(list[Any]):
    """A short list written on one line (the fallback's settings); name lists stay one name a line."""


class Dumper(yaml.SafeDumper):
    pass


Dumper.add_representer(
    Flow, lambda dumper, data: dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)
)


def render(data: Mapping[str, Any]) -> str:
    data = dict(data)
    for entry in data["fallback"]:
        for key, value in entry.items():
            if isinstance(value, list):
                entry[key] = Flow(Flow(item) if isinstance(item, list) else item for item in value)
    body = yaml.dump(
        data, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=10_000, allow_unicode=True
    )
    return HEADER + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="compare with the committed file; exit 1 on a change"
    )
    parser.add_argument(
        "--sdist-dir", type=Path, help="keep and reuse downloaded sdists here (outside the repository)"
    )
    parser.add_argument("--out", type=Path, default=OUT_FILE)
    parser.add_argument(
        "--through", metavar="RELEASE", help="read up to this release when it is newer than rules.yaml's last"
    )
    args = parser.parse_args(argv)
    if args.sdist_dir is not None and REPO_ROOT in args.sdist_dir.resolve().parents:
        parser.error("--sdist-dir must be outside the repository")
    sdists, wheel_only = releases_in_span(pypi_files(), args.through)
    with tempfile.TemporaryDirectory() as temporary:
        scratch = Path(temporary)
        download_dir = args.sdist_dir or scratch / "sdists"
        download_dir.mkdir(parents=True, exist_ok=True)
        releases = []
        for sdist in sdists:
            archive = fetch_sdist(sdist, download_dir)
            releases.append(extract(sdist, archive, scratch / "src"))
            if args.sdist_dir is None:
                archive.unlink()
            print(
                f"read vllm {sdist.version}: {sum(map(len, releases[-1].dicts.values()))} registry entries",
                file=sys.stderr,
            )
    text = render(document(releases, wheel_only, sdists))
    if args.check:
        same = args.out.exists() and args.out.read_text() == text
        print("up to date" if same else f"{args.out} differs from the releases' sources", file=sys.stderr)
        return 0 if same else 1
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(text.splitlines())} lines)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
