#!/usr/bin/env python3
"""What changed between two vLLM releases in the code colo's memory rules and tables read.

Every vLLM source colo cites is collected from the files that cite it (rules.yaml, docs/vllm-memory-rules.md,
the other per-release tables and the memory model's own modules under colo/vllm and colo/verify): each
`[vllm/]path/to/file.py` and `file.py::Name, Other.method` reference. Both releases' sources come from their
PyPI wheels (scripts/extract-vllm-serve-cli.py's cache, outside the repository), and for every cited file the
report says whether it changed, with a unified diff of each cited definition (the whole file where none is
named). A definition that left its file is looked for elsewhere in the release (a moved function). Then:
files added or deleted under vllm/v1/worker, vllm/v1/core, vllm/config, vllm/utils/mem_utils.py and
vllm/envs.py; `vllm serve`'s arguments (the serve-CLI extractor's tables: options added, removed or changed);
the defaults of every config dataclass field (vllm/config/*.py, EngineArgs); envs.py's variables.

Usage (from the repository root, with the project's virtual environment):
    python scripts/diff-vllm-release.py 0.35.0                   # against the newest release rules.yaml mirrors
    python scripts/diff-vllm-release.py 0.34.0 --old 0.33.0 --out docs/releases/0.34.0-diff.md --max-lines 60
    python scripts/diff-vllm-release.py 0.34.0 --source 0.34.0=DIR   # a release already unpacked (DIR/vllm)
or `make release-diff NEW=0.35.0`. Nothing downloaded is written inside the repository.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import importlib.util
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# Where colo cites vLLM's sources: the rules, their reference text, the per-release tables, the memory model.
CITING_GLOBS = (
    "colo/vllm/rules.yaml",
    "docs/vllm-memory-rules.md",
    "colo/vllm/pp_support.yaml",
    "colo/vllm/checkpoint/quant_methods.yaml",
    "colo/vllm/architectures.yaml",
    "colo/vllm/serve_cli.yaml",
    "colo/vllm/**/*.py",
    "colo/verify/*.py",
)
WATCHED = ("vllm/v1/worker/", "vllm/v1/core/", "vllm/config/", "vllm/utils/mem_utils.py", "vllm/envs.py")
# A cited path: directories and a file name (vllm/ optional), then `::` and definitions, comma-separated.
# A name directly followed by `/` or `.py` is the next path, not a definition.
_NAME = r"[A-Za-z_][\w.]*(?<!\.py)(?![\w./])"
_CITATION = re.compile(
    r"(?<![\w/.-])(?:vllm/)?((?:[A-Za-z_][\w]*/)*[A-Za-z_][\w]*\.py)"
    rf"(?:::({_NAME}(?:,\s*(?:and\s+)?{_NAME})*))?"
)
# Paths of this repository's own files, never vLLM's.
_OWN = ("colo/", "bench/", "tests/", "scripts/", "docs/", "examples/", "src/transformers/")


# ---------------------------------------------------------------- citations ---------------------------------------


@dataclass(frozen=True)
class Citation:
    path: str  # as cited, relative to the package root (vllm/ stripped)
    names: tuple[str, ...]  # the definitions named after `::` (empty: the file)
    where: str  # the citing file


def citations(text: str, where: str) -> list[Citation]:
    """Every vLLM source reference in `text`."""
    found = []
    for match in _CITATION.finditer(text):
        path = match.group(1)
        if path.startswith(_OWN) or path.startswith("colo") or ("/" not in path and path[0].isupper()):
            continue
        names = tuple(
            name.strip().removeprefix("and ").strip().rstrip(".")
            for name in (match.group(2) or "").split(",")
            if name.strip()
        )
        found.append(Citation(path, names, where))
    return found


@dataclass
class CitedFile:
    names: set[str] = field(default_factory=set)
    cited_by: Counter[str] = field(default_factory=Counter)
    whole: bool = False  # cited at least once without a definition


def collect(repo: Path = REPO, globs: Iterable[str] = CITING_GLOBS) -> dict[str, CitedFile]:
    """Every cited path with the definitions named in it and the files that cite it."""
    cited: dict[str, CitedFile] = {}
    for pattern in globs:
        for path in sorted(repo.glob(pattern)):
            where = str(path.relative_to(repo))
            for citation in citations(path.read_text(encoding="utf-8"), where):
                entry = cited.setdefault(citation.path, CitedFile())
                entry.names.update(citation.names)
                entry.whole |= not citation.names
                entry.cited_by[where] += 1
    return cited


# ---------------------------------------------------------------- one release's sources ----------------------------


_DEFINES = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)|^(\w+)\s*[:=]", re.M)


class Tree:
    """One release's Python sources (`root/vllm/...`), read on demand."""

    def __init__(self, release: str, root: Path) -> None:
        self.release = release
        self.root = root
        self._files = sorted(str(p.relative_to(root)) for p in (root / "vllm").rglob("*.py"))
        self._index: dict[str, list[str]] | None = None

    def _defined(self) -> dict[str, list[str]]:
        """Every name a file defines at any depth (functions, classes, top-level assignments) -> its files."""
        if self._index is None:
            self._index = {}
            for path in self._files:
                for match in _DEFINES.finditer(self.text(path) or ""):
                    self._index.setdefault(match.group(1) or match.group(2), []).append(path)
        return self._index

    @property
    def files(self) -> list[str]:
        return self._files

    def text(self, path: str) -> str | None:
        file = self.root / path
        return file.read_text(encoding="utf-8", errors="replace") if file.is_file() else None

    def resolve(self, cited: str) -> list[str]:
        """The release's files a cited path means: `vllm/<path>`, else every file ending so (a bare `fp8.py`)."""
        exact = f"vllm/{cited}"
        if exact in self._files:
            return [exact]
        return [f for f in self._files if f.endswith("/" + cited)]

    def defining(self, name: str) -> list[str]:
        """Files that define `name` (its last part for `Class.method`), found by text first, then by parsing."""
        candidates = dict.fromkeys(self._defined().get(name.split(".")[-1], ()))
        return [path for path in candidates if definition(self.text(path) or "", name) is not None]


def _named(body: Sequence[ast.stmt], name: str) -> ast.stmt | None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return node
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return node
    return None


def definition(source: str, name: str) -> str | None:
    """The source of `name` in a module: a top-level function, class or assignment, `Class.member`, or a bare
    method name found in any class (the first). None when the module has none."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    node: ast.stmt | None = None
    parts = name.split(".")
    body: Sequence[ast.stmt] = tree.body
    for part in parts:
        node = _named(body, part)
        if node is None:
            break
        body = node.body if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) else []
    if node is None and len(parts) == 1:
        for candidate in tree.body:
            if isinstance(candidate, ast.ClassDef) and (node := _named(candidate.body, name)) is not None:
                break
    if node is None:
        return None
    return ast.get_source_segment(source, node, padded=True)


def unified(old: str | None, new: str | None, label: str, old_release: str, new_release: str) -> list[str]:
    return list(
        difflib.unified_diff(
            (old or "").splitlines(),
            (new or "").splitlines(),
            f"{old_release} {label}",
            f"{new_release} {label}",
            lineterm="",
        )
    )


# ---------------------------------------------------------------- the comparison -----------------------------------


@dataclass
class Part:
    """One cited definition (or the whole file) in both releases."""

    label: str
    status: str  # unchanged, CHANGED, added, DELETED, moved, not found
    diff: list[str] = field(default_factory=list)
    note: str = ""


@dataclass
class FileReport:
    cited: str
    files: tuple[str, ...]  # what the path resolved to (old or new)
    cited_by: Counter[str]
    parts: list[Part] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(part.status not in ("unchanged", "not found") for part in self.parts)


def _one(tree: Tree, cited: str) -> str | None:
    found = tree.resolve(cited)
    return found[0] if len(found) == 1 else None


def compare_file(old: Tree, new: Tree, cited: str, entry: CitedFile) -> FileReport:
    old_path, new_path = _one(old, cited), _one(new, cited)
    resolved = {*old.resolve(cited), *new.resolve(cited)}
    report = FileReport(cited, tuple(sorted(resolved)), entry.cited_by)
    old_text = old.text(old_path) if old_path else None
    new_text = new.text(new_path) if new_path else None
    if old_text is None and new_text is None and not entry.names:
        where = f"{len(resolved)} files end so" if resolved else f"in neither {old.release} nor {new.release}"
        report.parts.append(Part("(file)", "not found", note=where))
    elif entry.whole or not entry.names:
        status = "unchanged" if old_text == new_text else "CHANGED"
        status = "added" if old_text is None else "DELETED" if new_text is None else status
        diff = unified(old_text, new_text, cited, old.release, new.release) if status == "CHANGED" else []
        report.parts.append(Part("(whole file)", status, diff))
    for name in sorted(entry.names):
        old_file = _file_defining(old, cited, name, old_path)
        new_file = _file_defining(new, cited, name, new_path)
        report.parts.append(_compare_name(old, new, name, old_file, new_file))
    return report


def _file_defining(tree: Tree, cited: str, name: str, path: str | None) -> tuple[str | None, str | None]:
    """The cited file, or where the cited path names several (a bare `utils.py`), the one defining `name`."""
    if path is None:
        defining = [f for f in tree.resolve(cited) if definition(tree.text(f) or "", name) is not None]
        path = defining[0] if len(defining) == 1 else None
    return path, tree.text(path) if path else None


def _compare_name(
    old: Tree,
    new: Tree,
    name: str,
    old_file: tuple[str | None, str | None],
    new_file: tuple[str | None, str | None],
) -> Part:
    (old_path, old_text), (new_path, new_text) = old_file, new_file
    before = definition(old_text, name) if old_text else None
    after = definition(new_text, name) if new_text else None
    note = ""
    if before is None:
        elsewhere = old.defining(name)
        if len(elsewhere) == 1:
            old_path, before = elsewhere[0], definition(old.text(elsewhere[0]) or "", name)
            note = f"{old.release}: in {old_path}"
    if after is None:
        elsewhere = new.defining(name)
        if len(elsewhere) == 1:
            new_path, after = elsewhere[0], definition(new.text(elsewhere[0]) or "", name)
            note = f"{note}; " if note else ""
            note += f"{new.release}: in {new_path}"
    if before is None and after is None:
        return Part(name, "not found", note="defined in neither release (a name of an older release?)")
    if before is None:
        return Part(name, "added", unified(None, after, name, old.release, new.release), note)
    if after is None:
        return Part(name, "DELETED", unified(before, None, name, old.release, new.release), note)
    if old_path != new_path:
        status = "moved" if before == after else "CHANGED"
        note = note or f"{old_path} -> {new_path}"
    else:
        status = "unchanged" if before == after else "CHANGED"
    return Part(
        name, status, unified(before, after, name, old.release, new.release) if before != after else [], note
    )


def tree_changes(old: Tree, new: Tree, watched: Sequence[str] = WATCHED) -> tuple[list[str], list[str]]:
    """Files (added, deleted) under the watched directories and files."""

    def under(path: str) -> bool:
        return any(path == w or (w.endswith("/") and path.startswith(w)) for w in watched)

    before = {f for f in old.files if under(f)}
    after = {f for f in new.files if under(f)}
    return sorted(after - before), sorted(before - after)


# ---------------------------------------------------------------- envs.py and config defaults ----------------------


def env_variables(source: str) -> dict[str, str]:
    """envs.py's `environment_variables`: each variable and the source of how it is read."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Name) and target.id == "environment_variables":
                value = node.value
                if isinstance(value, ast.Dict):
                    return {
                        key.value: ast.unparse(item)
                        for key, item in zip(value.keys, value.values, strict=True)
                        if isinstance(key, ast.Constant) and isinstance(key.value, str)
                    }
    return {}


def mapping_diff(old: Mapping[str, str], new: Mapping[str, str]) -> tuple[list[str], list[str], list[str]]:
    """(added, removed, changed) keys."""
    return (
        sorted(set(new) - set(old)),
        sorted(set(old) - set(new)),
        sorted(key for key in set(old) & set(new) if old[key] != new[key]),
    )


def field_defaults(source: str, module: str) -> dict[str, str]:
    """`Class.field` -> the source of its default, for every class of a module (dataclasses, pydantic
    dataclasses, ClassVars alike); a field without a default reads `(no default)`."""
    found = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                value = ast.unparse(item.value) if item.value is not None else "(no default)"
                found[f"{module}::{node.name}.{item.target.id}"] = value
            elif (
                isinstance(item, ast.Assign)
                and len(item.targets) == 1
                and isinstance(item.targets[0], ast.Name)
            ) and item.targets[0].id.isupper():
                found[f"{module}::{node.name}.{item.targets[0].id}"] = ast.unparse(item.value)
    return found


def config_defaults(tree: Tree) -> dict[str, str]:
    found: dict[str, str] = {}
    for path in tree.files:
        if path.startswith("vllm/config/") or path == "vllm/engine/arg_utils.py":
            text = tree.text(path) or ""
            try:
                found |= field_defaults(text, path.removeprefix("vllm/"))
            except SyntaxError:
                continue
    return found


# ---------------------------------------------------------------- `vllm serve` arguments --------------------------


def _serve_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "extract_vllm_serve_cli", REPO / "scripts" / "extract-vllm-serve-cli.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def serve_table(release: str, cache_dir: Path) -> dict[str, Any]:
    """The release's `vllm serve` table: from serve_cli.yaml when it holds the release, else read from the
    release's own parser by the extractor."""
    script = _serve_script()
    from colo.vllm.rules import release_key

    for entry in script.read_table(script.TABLE.read_text()):
        if release_key(entry["first"]) <= release_key(release) <= release_key(entry["last"]):
            table: dict[str, Any] = entry["table"]
            return table
    result: dict[str, Any] = script.read_release(release, cache_dir)["table"]
    return result


def serve_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    lines = []
    before, after = old["options"], new["options"]
    for name in sorted(set(after) - set(before)):
        lines.append(f"- added {name} {_spellings(after[name])}")
    for name in sorted(set(before) - set(after)):
        lines.append(f"- removed {name}")
    for name in sorted(set(before) & set(after)):
        if before[name] != after[name]:
            keys = sorted(
                k for k in set(before[name]) | set(after[name]) if before[name].get(k) != after[name].get(k)
            )
            changes = "; ".join(f"{k}: {before[name].get(k)!r} -> {after[name].get(k)!r}" for k in keys)
            lines.append(f"- changed {name}: {changes}")
    parser_changes = [k for k in old if k not in ("options", "types") and old[k] != new.get(k)]
    lines += [f"- parser {k}: {old[k]!r} -> {new.get(k)!r}" for k in parser_changes]
    return lines or ["- no change"]


def _spellings(option: Mapping[str, Any]) -> str:
    also = option.get("also") or []
    return f"(also {', '.join(also)})" if also else ""


# ---------------------------------------------------------------- the report --------------------------------------


def _stat(diff: Sequence[str]) -> str:
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    return f"+{added} -{removed} lines"


def _capped(lines: list[str], cap: int | None) -> list[str]:
    if cap is None or len(lines) <= cap:
        return lines
    return [*lines[:cap], f"... ({len(lines) - cap} more lines; run the script for the whole diff)"]


def render(
    old: Tree,
    new: Tree,
    reports: Sequence[FileReport],
    added: Sequence[str],
    deleted: Sequence[str],
    serve: Sequence[str],
    defaults: tuple[list[str], list[str], list[str], Mapping[str, str], Mapping[str, str]],
    envs: tuple[list[str], list[str], list[str], Mapping[str, str], Mapping[str, str]],
    cap: int | None = None,
    whole_file_stat: bool = False,
) -> Iterator[str]:
    changed = [r for r in reports if r.changed]
    missing = [r for r in reports if all(p.status == "not found" for p in r.parts)]
    yield f"# vLLM {old.release} -> {new.release}: the sources colo cites"
    yield ""
    yield (
        f"{len(reports)} cited files; {len(changed)} changed in what colo cites; {len(missing)} found in neither "
        f"release (paths of older releases). Generated by scripts/diff-vllm-release.py from the releases' PyPI "
        "wheels."
    )
    yield ""
    yield "## Cited files"
    yield ""
    for report in sorted(reports, key=lambda r: (not r.changed, r.cited)):
        state = "CHANGED" if report.changed else "not found" if report in missing else "unchanged"
        cited_by = ", ".join(f"{name} ({count})" for name, count in sorted(report.cited_by.items()))
        yield f"### {report.cited}: {state}"
        yield f"cited by {cited_by}" + (f"; resolves to {', '.join(report.files)}" if report.files else "")
        yield ""
        for part in report.parts:
            brief = whole_file_stat and part.label == "(whole file)" and part.diff
            note = ", ".join(filter(None, (part.note, _stat(part.diff) if part.diff else "")))
            yield f"- {part.label}: {part.status}" + (f" ({note})" if note else "")
            if brief:
                part.diff = []  # only its size: the cited definitions' diffs say what matters
        for part in report.parts:
            if part.diff:
                yield ""
                yield "```diff"
                yield from _capped(part.diff, cap)
                yield "```"
        yield ""
    yield "## Files added and deleted under " + ", ".join(WATCHED)
    yield ""
    yield from (f"- added {path}" for path in added)
    yield from (f"- deleted {path}" for path in deleted)
    if not added and not deleted:
        yield "- none"
    yield ""
    yield "## `vllm serve` arguments (the serve-CLI extractor's tables)"
    yield ""
    yield from serve
    yield ""
    yield "## Config dataclass fields (vllm/config/*.py, vllm/engine/arg_utils.py): defaults"
    yield ""
    yield from _mapping_lines(*defaults)
    yield ""
    yield "## envs.py variables"
    yield ""
    yield from _mapping_lines(*envs)


def _mapping_lines(
    added: list[str], removed: list[str], changed: list[str], old: Mapping[str, str], new: Mapping[str, str]
) -> Iterator[str]:
    yield from (f"- added {key} = {_short(new[key])}" for key in added)
    yield from (f"- removed {key} (was {_short(old[key])})" for key in removed)
    yield from (f"- changed {key}: {_short(old[key])} -> {_short(new[key])}" for key in changed)
    if not (added or removed or changed):
        yield "- no change"


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------- main ---------------------------------------------


@cache
def _newest_mirrored() -> str:
    sys.path.insert(0, str(REPO))
    from colo.vllm.rules import supported_range

    return supported_range()[1]


def sources(release: str, given: Mapping[str, Path], cache_dir: Path) -> Tree:
    if release in given:
        return Tree(release, given[release])
    return Tree(release, _serve_script().fetch_sources(release, cache_dir))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("new", metavar="NEW", help="the new release, e.g. 0.35.0")
    parser.add_argument("--old", help="the release to compare with; default: the newest rules.yaml mirrors")
    parser.add_argument("--source", action="append", default=[], metavar="RELEASE=DIR",
                        help="a release's sources already unpacked (DIR holds vllm/)")  # fmt: skip
    parser.add_argument(
        "--cache", type=Path, help="where wheels' sources are kept (default: the extractor's)"
    )
    parser.add_argument("--max-lines", type=int, help="cap each diff at this many lines")
    parser.add_argument(
        "--whole-file-stat",
        action="store_true",
        help="for a file cited without a definition, print the size of its diff instead of the diff",
    )
    parser.add_argument("--out", type=Path, help="write the report here instead of printing it")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    script = _serve_script()
    cache_dir = args.cache or script.DEFAULT_CACHE
    given = dict((release, Path(path)) for release, _, path in (s.partition("=") for s in args.source))
    old_release = args.old or _newest_mirrored()
    old, new = sources(old_release, given, cache_dir), sources(args.new, given, cache_dir)
    cited = collect()
    reports = [compare_file(old, new, path, entry) for path, entry in sorted(cited.items())]
    added, deleted = tree_changes(old, new)
    serve = serve_changes(serve_table(old.release, cache_dir), serve_table(new.release, cache_dir))
    old_defaults, new_defaults = config_defaults(old), config_defaults(new)
    old_envs = env_variables(old.text("vllm/envs.py") or "")
    new_envs = env_variables(new.text("vllm/envs.py") or "")
    text = "\n".join(
        render(
            old,
            new,
            reports,
            added,
            deleted,
            serve,
            (*mapping_diff(old_defaults, new_defaults), old_defaults, new_defaults),
            (*mapping_diff(old_envs, new_envs), old_envs, new_envs),
            args.max_lines,
            args.whole_file_stat,
        )
    )
    if args.out:
        args.out.write_text(text + "\n")
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
