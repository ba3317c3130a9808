"""colo's modules and what each imports, read from the source (every import, lazy and type-only ones too)."""

from __future__ import annotations

import ast
import gc
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "colo"


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name
    imported: str  # the dotted name as written (a module, or a module's attribute)
    line: int


def module_name(path: Path, root: Path = REPO_ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_in(path: Path, root: Path = REPO_ROOT) -> Iterator[Import]:
    importer = module_name(path, root)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (Import(importer, alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield Import(importer, node.module, node.lineno)
            yield from (Import(importer, f"{node.module}.{alias.name}", node.lineno) for alias in node.names)


@cache
def colo_modules() -> frozenset[str]:
    return frozenset(module_name(path) for path in PACKAGE.rglob("*.py"))


def _read_imports() -> tuple[Import, ...]:
    return tuple(i for path in sorted(PACKAGE.rglob("*.py")) for i in imports_in(path))


@cache
def colo_imports() -> tuple[Import, ...]:
    # As in tests/test_complexity.py: a finalizer of an earlier test's garbage run mid-parse breaks CPython
    # 3.11's AST recursion bookkeeping (SystemError "AST constructor recursion depth mismatch"); collect that
    # garbage once, then keep the collector off while parsing.
    gc.collect()
    gc.disable()
    try:
        return _read_imports()
    finally:
        gc.enable()


def reaching_into(package: str, imports: tuple[Import, ...], modules: frozenset[str]) -> list[Import]:
    """Imports from outside `package` that name one of its submodules rather than the package itself."""
    inside = package + "."
    return [
        i
        for i in imports
        if not (i.importer == package or i.importer.startswith(inside))
        and i.imported.startswith(inside)
        and i.imported in modules
    ]


def module_graph() -> dict[str, set[str]]:
    """Module -> the colo modules it imports; `from pkg import name` counts pkg.name when that is a module."""
    modules = colo_modules()
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for i in colo_imports():
        if i.imported in modules and i.imported != i.importer:
            graph[i.importer].add(i.imported)
    return graph


def package_of(module: str) -> str:
    """The package a module belongs to at colo's top level: colo.plan.pair -> colo.plan; a top-level module
    (colo.errors) is its own; the package facade (colo/__init__.py) is `colo`."""
    return ".".join(module.split(".")[:2])


def package_graph() -> dict[str, set[str]]:
    """colo's top-level packages (and top-level modules) -> those it imports, lazy imports included."""
    graph: dict[str, set[str]] = {}
    for importer, imported in module_graph().items():
        source = package_of(importer)
        graph.setdefault(source, set()).update(package_of(m) for m in imported if package_of(m) != source)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
