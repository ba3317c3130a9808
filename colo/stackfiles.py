"""Read Pulumi.yaml and stacks/Pulumi.<stack>.yaml the way the Pulumi CLI does.

The Python SDK never reads these files: the CLI merges project defaults with the stack file and hands the
result to the program. `colo plan`, `colo render` and the tests run without the CLI, so they repeat that
merge here, in one place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colo.config.yaml_safety import UnsafeYaml, load_yaml
from colo.errors import ConfigError, Problem
from colo.files import MIB, FileRefused, decode_utf8, read_bounded

REPO_ROOT = Path(__file__).resolve().parents[1]
MAX_STACK_FILE_BYTES = MIB  # a 100-pair stack file is about 50 KiB


@dataclass(frozen=True)
class StackFile:
    """Merged config of one stack: `values` are colo's keys without the prefix; `others` keep theirs."""

    project: str
    stack: str
    values: dict[str, Any]
    secret_keys: frozenset[str] = frozenset()
    others: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # the stack file's path, for messages

    def engine_config(self, secret_placeholder: str = "redacted") -> tuple[dict[str, str], list[str]]:
        """Config as the engine hands it to a program: 'project:key' -> string (JSON for objects)."""
        config: dict[str, str] = {}
        secrets: list[str] = []
        for key, value in self.values.items():
            full = f"{self.project}:{key}"
            if key in self.secret_keys:
                config[full] = secret_placeholder
                secrets.append(full)
            else:
                config[full] = _encode(value)
        for key, value in self.others.items():
            config[key] = _encode(value)
        return config, secrets


def _encode(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        loaded = load_yaml(decode_utf8(read_bounded(path, MAX_STACK_FILE_BYTES)))
    except (FileRefused, UnsafeYaml) as exc:
        raise ConfigError([Problem(str(path), str(exc))]) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError([Problem(str(path), "must be a YAML mapping")])
    return loaded


def _split_key(key: str, project: str) -> tuple[str | None, str]:
    if ":" in key:
        namespace, name = key.split(":", 1)
        return (name if namespace == project else None), key
    return key, f"{project}:{key}"


def load_stack_file(path: Path, *, project_file: Path | None = None, stack: str | None = None) -> StackFile:
    """Merge Pulumi.yaml defaults with one stack file. `path` may be any file shaped like a stack file."""
    project_file = project_file or REPO_ROOT / "Pulumi.yaml"
    project = _read_yaml(project_file)
    name = str(project.get("name", "colo"))
    values: dict[str, Any] = {}
    others: dict[str, Any] = {}
    for key, decl in (project.get("config") or {}).items():
        short, full = _split_key(str(key), name)
        default = decl.get("default", decl.get("value")) if isinstance(decl, dict) else decl
        if default is None:
            continue
        if short is not None:
            values[short] = default
        else:
            others[full] = default
    secret_keys: set[str] = set()
    stack_config = _read_yaml(path).get("config") or {}
    if not isinstance(stack_config, dict):
        raise ConfigError([Problem(f"{path}: config", "must be a mapping of config keys to values")])
    for key, value in stack_config.items():
        short, full = _split_key(str(key), name)
        is_secret = isinstance(value, dict) and set(value) == {"secure"}
        if short is None:
            others[full] = value
            continue
        if is_secret:
            secret_keys.add(short)
        values[short] = value
    stack_name = stack or path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    return StackFile(name, stack_name, values, frozenset(secret_keys), others, source=str(path))


def _stack_dir(root: Path) -> Path:
    project = _read_yaml(root / "Pulumi.yaml")
    return root / str(project.get("stackConfigDir", "."))


def stack_path(stack: str, root: Path = REPO_ROOT) -> Path:
    return _stack_dir(root) / f"Pulumi.{stack}.yaml"


def list_stacks(root: Path = REPO_ROOT) -> list[str]:
    directory = _stack_dir(root)
    return sorted(
        p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in directory.glob("Pulumi.*.yaml")
    )


def load_stack(stack: str, root: Path = REPO_ROOT) -> StackFile:
    path = stack_path(stack, root)
    if not path.exists():
        raise ConfigError(
            [
                Problem(
                    f"--stack {stack}", f"no {path.name} in {path.parent.name}/; stacks: {list_stacks(root)}"
                )
            ]
        )
    return load_stack_file(path, project_file=root / "Pulumi.yaml", stack=stack)
