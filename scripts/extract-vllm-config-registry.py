#!/usr/bin/env python3
"""Which config.json model types load without the repository's own code, release by release, into config_registry.yaml.

vLLM reads a checkpoint's config in vllm/transformers_utils/config.py::get_config: a model_type in its own
`_CONFIG_REGISTRY` gets vLLM's config class; any other goes to transformers' `AutoConfig.from_pretrained(...,
trust_remote_code=...)`, which refuses a config.json whose `auto_map` names an `AutoConfig` class unless its
model_type is one transformers registers itself (`CONFIG_MAPPING_NAMES`) or trust_remote_code is set
(src/transformers/models/auto/configuration_auto.py::AutoConfig.from_pretrained,
src/transformers/dynamic_module_utils.py::resolve_trust_remote_code).

This script reads, with `ast` only (neither vLLM nor transformers is imported):
  - the keys of `_CONFIG_REGISTRY` (with the `**` dicts it spreads) in every vLLM release unpacked under
    --sources-dir (<version>/vllm/transformers_utils/config.py, the releases' PyPI wheels), written as runs of
    consecutive releases under `vllm_config_registry:`;
  - with --transformers-wheel, the keys of `CONFIG_MAPPING_NAMES` in that transformers wheel (from 5.x the list is
    in models/auto/auto_mappings.py and configuration_auto.py adds a few), under `transformers_model_types:`;
    without it that list is kept as written.

Usage (from the repository root):
    python scripts/extract-vllm-config-registry.py                   # rewrite the generated parts
    python scripts/extract-vllm-config-registry.py --check           # exit 1 when the committed file differs
    python scripts/extract-vllm-config-registry.py --transformers-wheel transformers-5.23.0-py3-none-any.whl
The header (everything before `releases:`) is kept as written.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT_FILE = REPO_ROOT / "colo" / "vllm" / "config_registry.yaml"
DEFAULT_SOURCES = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "colo" / "vllm-sources"
CONFIG_PY = Path("vllm") / "transformers_utils" / "config.py"
REGISTRY = "_CONFIG_REGISTRY"


def _release_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def _dict_keys(node: ast.expr, assigned: Mapping[str, ast.expr]) -> set[str]:
    """The string keys of a dict display or a `dict(...)`/`LazyConfigDict(...)` call, following `**name` to the
    module-level assignment of that name."""
    keys: set[str] = set()
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                keys |= _spread(value, assigned)
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.add(key.value)
            else:
                raise ValueError(f"a key that is not a string: {ast.dump(key)}")
        return keys
    if isinstance(node, ast.Call):
        for argument in node.args:
            keys |= _dict_keys(argument, assigned)
        for keyword in node.keywords:
            keys |= _spread(keyword.value, assigned) if keyword.arg is None else {keyword.arg}
        return keys
    raise ValueError(f"not a dict: {ast.dump(node)[:80]}")


def _spread(node: ast.expr, assigned: Mapping[str, ast.expr]) -> set[str]:
    if isinstance(node, ast.Name):
        return _dict_keys(assigned[node.id], assigned)
    return _dict_keys(node, assigned)


def _assignments(tree: ast.Module) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out[node.target.id] = node.value
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value
    return out


def config_registry(config_py: Path) -> set[str]:
    """The model types of one release's `_CONFIG_REGISTRY`."""
    assigned = _assignments(ast.parse(config_py.read_text()))
    return _dict_keys(assigned[REGISTRY], assigned)


def transformers_model_types(wheel: Path) -> set[str]:
    """The keys of `CONFIG_MAPPING_NAMES` in a transformers wheel: the generated auto_mappings.py (5.x) or
    configuration_auto.py's own list, plus the `CONFIG_MAPPING_NAMES.update({...})` and the `**{...}` that
    configuration_auto.py adds."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        texts = [
            archive.read(path).decode()
            for path in (
                "transformers/models/auto/auto_mappings.py",
                "transformers/models/auto/configuration_auto.py",
            )
            if path in names
        ]
    keys: set[str] = set()
    for text in texts:
        for node in ast.walk(ast.parse(text)):
            keys |= _mapping_names_keys(node)
    return keys


def _mapping_names_keys(node: ast.AST) -> set[str]:
    keys: set[str] = set()
    if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "CONFIG_MAPPING_NAMES" for t in node.targets
    ):
        keys |= _ordered_dict_keys(node.value)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "update"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "CONFIG_MAPPING_NAMES"
    ):
        for argument in node.args:
            keys |= _ordered_dict_keys(argument)
    return keys


def _ordered_dict_keys(node: ast.expr) -> set[str]:
    """Keys of `OrderedDict([("a", "A"), ...])`, `OrderedDict(**{...}, **NAME)` or a dict display."""
    keys: set[str] = set()
    if isinstance(node, ast.Call):
        for argument in node.args:
            keys |= _ordered_dict_keys(argument)
        for keyword in node.keywords:
            keys |= _ordered_dict_keys(keyword.value) if keyword.arg is None else {keyword.arg}
    elif isinstance(node, ast.List):
        for item in node.elts:
            if isinstance(item, ast.Tuple) and isinstance(item.elts[0], ast.Constant):
                keys.add(str(item.elts[0].value))
    elif isinstance(node, ast.Dict):
        keys |= {str(k.value) for k in node.keys if isinstance(k, ast.Constant)}
    return keys


def ranges_of(releases: list[str], per_release: Mapping[str, set[str]]) -> dict[str, list[list[str]]]:
    """Each model type's runs of consecutive releases (in `releases` order) whose registry has it."""
    out: dict[str, list[list[str]]] = {}
    for name in sorted(set().union(*per_release.values())):
        runs: list[list[str]] = []
        previous_in = False
        for release in releases:
            now_in = name in per_release[release]
            if now_in and previous_in:
                runs[-1][1] = release
            elif now_in:
                runs.append([release, release])
            previous_in = now_in
        out[name] = runs
    return out


def _quoted(name: str) -> str:
    return f'"{name}"'


def render(releases: list[str], ranges: Mapping[str, list[list[str]]], transformers: Iterable[str]) -> str:
    lines = ["releases: [" + ", ".join(_quoted(r) for r in releases) + "]", "vllm_config_registry:"]
    for name, runs in ranges.items():
        shown = ", ".join(f"[{_quoted(first)}, {_quoted(last)}]" for first, last in runs)
        lines.append(f"  {_quoted(name)}: [{shown}]")
    lines.append("transformers_model_types:")
    lines += [f"  - {_quoted(name)}" for name in sorted(transformers)]
    return "\n".join(lines) + "\n"


def split(text: str) -> tuple[str, list[str]]:
    """The header (kept as written) and the committed transformers model types."""
    start = re.search(r"^releases:", text, re.M)
    header, rest = (text[: start.start()], text[start.start() :]) if start else (text, "")
    _, _, listed = rest.partition("transformers_model_types:\n")
    return header, [
        line.strip()[2:].strip('"') for line in listed.splitlines() if line.strip().startswith("- ")
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--sources-dir", type=Path, default=DEFAULT_SOURCES, help="<version>/vllm/ per release"
    )
    parser.add_argument("--transformers-wheel", type=Path, help="re-read transformers' model types from it")
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed file differs")
    parser.add_argument("--out", type=Path, default=OUT_FILE)
    args = parser.parse_args(argv)
    found = [d.name for d in args.sources_dir.iterdir() if (d / CONFIG_PY).is_file()]
    releases = sorted(found, key=_release_key)
    if not releases:
        parser.error(f"no vLLM sources under {args.sources_dir}")
    per_release = {release: config_registry(args.sources_dir / release / CONFIG_PY) for release in releases}
    header, transformers = split(args.out.read_text())
    if args.transformers_wheel is not None:
        transformers = sorted(transformers_model_types(args.transformers_wheel))
    text = header + render(releases, ranges_of(releases, per_release), transformers)
    if args.check:
        same = args.out.read_text() == text
        print("up to date" if same else f"{args.out} differs from the releases' sources", file=sys.stderr)
        return 0 if same else 1
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(releases)} vLLM releases)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
