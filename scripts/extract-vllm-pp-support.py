#!/usr/bin/env python3
"""Which registered architectures lack pipeline-parallel support, release by release, into pp_support.yaml.

vLLM refuses --pipeline-parallel-size > 1 for a model class that does not implement `SupportsPP`
(`ModelConfig.verify_with_parallel_config`; the registry's `supports_pp` asks whether SupportsPP is in the class's
MRO, vllm/model_executor/models/interfaces.py::_supports_pp_attributes). For each release this script reads, with
`ast` only (vLLM is never imported), vllm/model_executor/models/registry.py (every architecture -> module, class,
through scripts/extract-vllm-architectures.py's registry reader) and follows each class's bases through the model
modules (vllm/model_executor/models/*.py and, from 0.33, vllm/models/**) and their imports until SupportsPP is
found or every base ends outside vLLM. A base the script cannot find in vLLM's sources (torch's nn.Module,
a Transformers class) counts as not implementing SupportsPP.

Usage (from the repository root, with the project's virtual environment):
    python scripts/extract-vllm-pp-support.py --sdist-dir DIR             # rewrite `unsupported:` of pp_support.yaml
    python scripts/extract-vllm-pp-support.py --sdist-dir DIR --check     # exit 1 when the committed file differs
    python scripts/extract-vllm-pp-support.py --sdist-dir DIR --through 0.34.0
The releases are the same as architectures.yaml's (its `sdists:` list, which --through extends); sdists are
downloaded into DIR (outside the repository) unless already there. Everything but the `unsupported:` mapping
(the header, `source`, `placement`) is kept as written.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT_FILE = REPO_ROOT / "colo" / "vllm" / "pp_support.yaml"
MODEL_PATTERNS = ("vllm/model_executor/models/*", "vllm/models/*")


def _architectures_script() -> ModuleType:
    path = Path(__file__).with_name("extract-vllm-architectures.py")
    spec = importlib.util.spec_from_file_location("extract_vllm_architectures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ARCH = _architectures_script()


@dataclass
class SourceTree:
    """The model modules of one release, parsed on demand; answers whether a class implements SupportsPP."""

    root: Path
    parsed: dict[str, ast.Module | None] = field(default_factory=dict)
    verdicts: dict[tuple[str, str], bool] = field(default_factory=dict)

    def module_file(self, module: str) -> Path | None:
        base = self.root / Path(*module.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def tree(self, module: str) -> ast.Module | None:
        if module not in self.parsed:
            path = self.module_file(module)
            self.parsed[module] = ast.parse(path.read_text()) if path is not None else None
        return self.parsed[module]

    def _imported(self, module: str, tree: ast.Module, name: str) -> tuple[str, str] | None:
        """Where `name` comes from when `module` imports it (module, name there); None when it is not imported."""
        package = (
            module
            if self.module_file(module) == self.root / Path(*module.split(".")) / "__init__.py"
            else module.rpartition(".")[0]
        )
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            for alias in node.names:
                if (alias.asname or alias.name) != name:
                    continue
                if node.level:
                    base = package
                    for _ in range(node.level - 1):
                        base = base.rpartition(".")[0]
                    source = f"{base}.{node.module}" if node.module else base
                else:
                    source = node.module or ""
                return source, alias.name
        return None

    def implements(self, module: str, name: str, depth: int = 0) -> bool:
        """Whether class `name` as `module` defines or imports it has SupportsPP among its bases, transitively."""
        key = (module, name)
        if key in self.verdicts:
            return self.verdicts[key]
        self.verdicts[key] = False  # a cycle, or a class outside vLLM's sources, does not implement it
        tree = self.tree(module) if module.startswith("vllm") else None
        found = False
        if tree is not None and depth < 40:
            classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
            if name in classes:
                found = any(self._base_implements(module, base, depth) for base in classes[name].bases)
            elif (origin := self._imported(module, tree, name)) is not None:
                found = self.implements(*origin, depth + 1)
        self.verdicts[key] = found
        return found

    def _base_implements(self, module: str, base: ast.expr, depth: int) -> bool:
        if isinstance(base, ast.Subscript):  # Generic[...] and friends
            base = base.value
        if isinstance(base, ast.Attribute):
            if base.attr == "SupportsPP":
                return True
            if isinstance(base.value, ast.Name):  # `interfaces.SupportsPP`, `llama.LlamaForCausalLM`
                tree = self.tree(module)
                origin = self._imported(module, tree, base.value.id) if tree is not None else None
                owner = (
                    ".".join(origin) if origin is not None else f"{module.rpartition('.')[0]}.{base.value.id}"
                )
                return self.implements(owner, base.attr, depth + 1)
            return False
        if isinstance(base, ast.Name):
            return base.id == "SupportsPP" or self.implements(module, base.id, depth + 1)
        return False


def registry_module(target: str) -> str:
    """registry.py's module names are relative to vllm.model_executor.models unless dotted from `vllm.`."""
    return target if target.startswith("vllm.") else f"vllm.model_executor.models.{target}"


def unsupported(release: str, root: Path) -> set[str]:
    """Registered architectures whose class does not implement SupportsPP in this release."""
    entry = ARCH.Release(release)
    ARCH.read_registry(entry, root)
    tree = SourceTree(root)
    missing: set[str] = set()
    for table in entry.dicts.values():
        for architecture, target in table.items():
            module, _, cls = target.partition(":")
            if not tree.implements(registry_module(module), cls):
                missing.add(architecture)
    return missing


def ranges_of(releases: list[str], per_release: Mapping[str, set[str]]) -> dict[str, list[list[str]]]:
    """Each architecture's runs of consecutive releases (in `releases` order) in which it lacks SupportsPP."""
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


def render_unsupported(ranges: Mapping[str, list[list[str]]]) -> str:
    lines = ["unsupported:"]
    for name, runs in ranges.items():
        shown = ", ".join(f'["{first}", "{last}"]' for first, last in runs)
        lines.append(f"  {name}: [{shown}]")
    return "\n".join(lines) + "\n"


def replace_unsupported(text: str, section: str) -> str:
    """The file with its `unsupported:` mapping (to the end, or to the next top-level key) replaced."""
    match = re.search(r"^unsupported:\n(?:[ #].*\n|\n)*", text, re.M)
    if match is None:
        return text.rstrip("\n") + "\n" + section
    return text[: match.start()] + section + text[match.end() :]


def unpack_models(archive: Path, into: Path) -> Path:
    import subprocess

    into.mkdir(parents=True, exist_ok=True)
    patterns = [f"*/{pattern}" for pattern in MODEL_PATTERNS]
    subprocess.run(
        ["tar", "-xzf", str(archive), "-C", str(into), "--strip-components=1", "--wildcards", *patterns],
        check=False,
        stderr=subprocess.DEVNULL,
    )
    return into


def read_releases(sdists: Iterable[object], sdist_dir: Path) -> dict[str, set[str]]:
    per_release: dict[str, set[str]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for sdist in sdists:
            version = sdist.version  # type: ignore[attr-defined]
            archive = ARCH.fetch_sdist(sdist, sdist_dir)
            per_release[version] = unsupported(version, unpack_models(archive, Path(scratch) / version))
            print(f"read vllm {version}: {len(per_release[version])} without SupportsPP", file=sys.stderr)
    return per_release


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sdist-dir", type=Path, required=True, help="sdists kept here (outside the repository)"
    )
    parser.add_argument(
        "--through", metavar="RELEASE", help="read up to this release (newer than rules.yaml's)"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed file differs")
    parser.add_argument("--out", type=Path, default=OUT_FILE)
    args = parser.parse_args(argv)
    if REPO_ROOT in args.sdist_dir.resolve().parents:
        parser.error("--sdist-dir must be outside the repository")
    args.sdist_dir.mkdir(parents=True, exist_ok=True)
    sdists, _wheel_only = ARCH.releases_in_span(ARCH.pypi_files(), args.through)
    per_release = read_releases(sdists, args.sdist_dir)
    text = replace_unsupported(
        args.out.read_text(), render_unsupported(ranges_of(list(per_release), per_release))
    )
    if args.check:
        same = args.out.read_text() == text
        print("up to date" if same else f"{args.out} differs from the releases' sources", file=sys.stderr)
        return 0 if same else 1
    args.out.write_text(text)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
