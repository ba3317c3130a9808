"""Find the project and read Pulumi.yaml and stacks/Pulumi.<stack>.yaml the way the Pulumi CLI does.

The Python SDK never reads these files: the CLI finds the project (the nearest Pulumi.yaml from the working
directory up), merges its defaults with the stack file and hands the result to the program, which it runs
in the project directory. `colo plan`, `colo render` and the tests run without the CLI, so they repeat
that here, in one place. Nothing is read relative to where colo itself is installed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from colo.config.yaml_safety import UnsafeYaml, load_yaml
from colo.errors import ConfigError, Problem
from colo.files import MIB, FileRefused, decode_utf8, read_bounded
from colo.project import find_project as find_project
from colo.project import require_project as require_project

MAX_STACK_FILE_BYTES = MIB  # a 100-pair stack file is about 50 KiB


# What a secret's value reads as when the program runs under the mock runtime, which cannot decrypt it.
MOCK_SECRET_VALUE = "mock-secret-value"


@dataclass(frozen=True)
class StackFile:
    """Merged config of one stack: `values` are colo's keys without the prefix; `others` keep theirs."""

    project: str
    stack: str
    values: dict[str, Any]
    secret_keys: frozenset[str] = frozenset()
    others: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # the stack file's path, for messages
    # The project directory the program runs in, and the program (Pulumi.yaml `main`, default the
    # directory's __main__.py); None for a stack file read without a project.
    project_dir: Path | None = None
    program: Path | None = None

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


def _project_defaults(project: dict[str, Any], name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Pulumi.yaml's config defaults: colo's keys without the prefix, and every other namespace's."""
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
    return values, others


def load_stack_file(path: Path, *, project_file: Path | None = None, stack: str | None = None) -> StackFile:
    """Merge Pulumi.yaml defaults with one stack file. `path` may be any file shaped like a stack file;
    without `project_file`, the project is the one found from the working directory, if any."""
    project_file = project_file or find_project()
    project = _read_yaml(project_file) if project_file is not None else {}
    name = str(project.get("name", "colo"))
    values, others = _project_defaults(project, name)
    secret_keys: set[str] = set()
    stack_config = _read_yaml(path).get("config") or {}
    if not isinstance(stack_config, dict):
        raise ConfigError([Problem(f"{path}: config", "must be a mapping of config keys to values")])
    for key, value in stack_config.items():
        short, full = _split_key(str(key), name)
        if short is None:
            others[full] = value
            continue
        if isinstance(value, dict) and set(value) == {"secure"}:
            secret_keys.add(short)
        values[short] = value
    stack_name = stack or path.name.removeprefix("Pulumi.").removesuffix(path.suffix)
    found = StackFile(name, stack_name, values, frozenset(secret_keys), others, source=str(path))
    if project_file is None:
        return found
    project_dir = project_file.parent
    return replace(found, project_dir=project_dir, program=project_dir / str(project.get("main") or "."))


def _stack_files(project_file: Path) -> tuple[Path, str]:
    """The directory stack files live in, and their extension (the project file's)."""
    project = _read_yaml(project_file)
    return project_file.parent / str(project.get("stackConfigDir", ".")), project_file.suffix


def stack_path(stack: str, start: Path | None = None) -> Path:
    directory, extension = _stack_files(require_project(start))
    return directory / f"Pulumi.{stack}{extension}"


def list_stacks(start: Path | None = None) -> list[str]:
    directory, extension = _stack_files(require_project(start))
    return sorted(
        p.name.removeprefix("Pulumi.").removesuffix(extension) for p in directory.glob(f"Pulumi.*{extension}")
    )


def load_stack(stack: str, start: Path | None = None) -> StackFile:
    """The stack as the Pulumi CLI would select it in the project found from `start` (default: the working
    directory)."""
    project_file = require_project(start)
    path = stack_path(stack, project_file.parent)
    if not path.exists():
        raise ConfigError(
            [
                Problem(
                    f"--stack {stack}",
                    f"no {path.name} in {path.parent}; stacks: {list_stacks(project_file.parent)}",
                )
            ]
        )
    return load_stack_file(path, project_file=project_file, stack=stack)
