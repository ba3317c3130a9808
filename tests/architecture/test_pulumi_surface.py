"""colo reaches the Pulumi SDK only through what the SDK publishes: names in a module's `__all__`, and the
modules Pulumi's documentation names (pulumi, pulumi.runtime, pulumi.automation, pulumi.log and the
component-provider host in pulumi.provider.experimental). A private surface (the root Stack's `outputs`,
pulumi.runtime.config.CONFIG, pulumi.runtime.settings, the RPC helpers) can change in any release, and
pyproject's SDK range is only as wide as colo keeps to this."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.architecture.imports import PACKAGE, module_name

# Modules the SDK documents for programs to use (https://www.pulumi.com/docs/reference/pkg/python/pulumi/,
# and /docs/iac/guides/building-extending/components/ for the component-provider host).
DOCUMENTED_MODULES = frozenset(
    {"pulumi", "pulumi.runtime", "pulumi.automation", "pulumi.log", "pulumi.provider.experimental"}
)


def private_part(dotted: str) -> str | None:
    """The first part of `dotted` (pulumi.x.y) that the SDK does not publish, or None where all is public.
    A name is published by a documented module that lists it in `__all__` (pulumi.log has none: its four
    functions are its surface); what such a name holds (a class's methods) is not checked further."""
    parts = dotted.split(".")
    module = parts[0]
    for index, part in enumerate(parts[1:], start=1):
        here = f"{module}.{part}"
        if any(documented == here or documented.startswith(f"{here}.") for documented in DOCUMENTED_MODULES):
            module = here  # a documented module, or a package on the way to one
            continue
        if part.startswith("_") or module not in DOCUMENTED_MODULES:
            return ".".join(parts[: index + 1])
        exported = getattr(importlib.import_module(module), "__all__", None)
        if exported is not None and part not in exported:
            return ".".join(parts[: index + 1])
        return None  # a published name: what it holds is its own surface
    return None


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def sdk_names(path: Path) -> Iterator[tuple[int, str]]:
    """Every dotted SDK name a module uses: its imports, and attribute chains on names bound to SDK modules."""
    tree = ast.parse(path.read_text(), str(path))
    bound: dict[str, str] = {}  # local name -> the SDK module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "pulumi":
                    yield node.lineno, alias.name
                    # `import pulumi.x` binds pulumi; `import pulumi.x as y` binds y to pulumi.x
                    bound[alias.asname or "pulumi"] = alias.name if alias.asname else "pulumi"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != "pulumi":
                continue
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                yield node.lineno, full
                if full in DOCUMENTED_MODULES:
                    bound[alias.asname or alias.name] = full
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):  # every chain and each of its prefixes
            dotted = _dotted(node)
            if dotted is not None and dotted.split(".")[0] in bound:
                head, _, rest = dotted.partition(".")
                yield node.lineno, f"{bound[head]}.{rest}"


def test_the_rule_refuses_what_the_sdk_keeps_private() -> None:
    assert private_part("pulumi.runtime.config.CONFIG") == "pulumi.runtime.config"
    assert private_part("pulumi.runtime.settings.get_monitor") == "pulumi.runtime.settings"
    assert private_part("pulumi.output.Unknown") == "pulumi.output"
    assert private_part("pulumi.runtime.proto.resource_pb2") == "pulumi.runtime.proto"
    assert private_part("pulumi.runtime._json") == "pulumi.runtime._json"


def test_the_rule_accepts_what_the_sdk_publishes() -> None:
    for name in (
        "pulumi.Output.all",
        "pulumi.runtime.set_all_config",
        "pulumi.runtime.get_config_env",
        "pulumi.runtime.Mocks",
        "pulumi.log.info",
        "pulumi.automation.Stack",
        "pulumi.provider.experimental.component_provider_host",
        "pulumi.contains_unknowns",
    ):
        assert private_part(name) is None, name


def test_a_module_bound_under_another_name_is_followed(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from pulumi import runtime as rt\nimport pulumi\nrt.config.CONFIG\npulumi.runtime.test\n"
    )
    names = {name for _, name in sdk_names(module)}
    assert "pulumi.runtime.config.CONFIG" in names
    assert "pulumi.runtime.test" in names


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: module_name(p).removeprefix("colo.")
)
def test_colo_uses_only_published_sdk_names(path: Path) -> None:
    private = sorted({f"line {line}: {name}" for line, name in sdk_names(path) if private_part(name)})
    assert not private, f"{module_name(path)} reaches into the Pulumi SDK's private surface: {private}"
