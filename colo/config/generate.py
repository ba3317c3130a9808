"""Everything generated from the stack schema (colo.config.schema), which is defined once:

- the stack file's JSON Schema (`colo schema`), for editors and other tools;
- the config reference, docs/config.md;
- the server types of colo's component for other languages, colo/components/multi_language_types.py.

`python -m colo.config.generate` rewrites the two files; tests/config/test_generated.py fails while either
differs from what the schema says.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from colo.config.load import CONFIG_KEYS, PROJECT, SECRET_KEYS
from colo.config.schema import StackConfig

REFERENCE = Path("docs/config.md")
OTHER_LANGUAGES = Path("colo/components/multi_language_types.py")
REF = "#/$defs/"
# The server types other languages see, by their schema model: the pydantic model each mirrors.
SERVER_TYPES = {
    "ServerSpec": "Server",
    "VllmImage": "VllmRelease",
    "VllmBuild": "VllmBuild",
    "Speculative": "Speculative",
}


def _schema() -> dict[str, Any]:
    found: dict[str, Any] = StackConfig.model_json_schema(by_alias=True)
    return found


def stack_file_schema() -> dict[str, Any]:
    """The JSON Schema of a stack file (Pulumi.<stack>.yaml): colo's keys as the schema validates them, its two
    secrets as ciphertext only, every other namespace's keys left to their owners."""
    schema = _schema()
    keys = {f"{PROJECT}:{key}": schema["properties"][key] for key in CONFIG_KEYS}
    secret = {
        "type": "object",
        "description": "A Pulumi secret (pulumi config set --secret KEY VALUE): ciphertext, never plain text",
        "properties": {"secure": {"type": "string"}},
        "required": ["secure"],
        "additionalProperties": False,
    }
    keys |= {f"{PROJECT}:{key}": secret for key in SECRET_KEYS}
    known = "|".join(key.removeprefix(f"{PROJECT}:") for key in keys)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "colo stack file (Pulumi.<stack>.yaml)",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": keys,
                "required": [f"{PROJECT}:pairs"],
                # Any other colo: key is a typo colo refuses; other namespaces (aws:, kubernetes:) are theirs.
                "patternProperties": {f"^{PROJECT}:(?!({known})$)": False},
            }
        },
        "$defs": schema["$defs"],
    }


def _ref(node: Mapping[str, Any]) -> str | None:
    ref = node.get("$ref")
    return str(ref).removeprefix(REF) if ref else None


def _type_text(node: Mapping[str, Any]) -> str:
    """A property's type as the reference shows it: `string`, `one of: a, b`, `list of Pair`, ..."""
    if (ref := _ref(node)) is not None:
        return f"[{ref}](#{ref.lower()})"
    if "anyOf" in node:
        kinds = [_type_text(option) for option in node["anyOf"] if option.get("type") != "null"]
        return " or ".join(kinds)
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{value}`" for value in node["enum"])
    kind = node.get("type", "any")
    if kind == "array":
        return f"list of {_type_text(node.get('items', {}))}"
    if kind == "object":
        values = node.get("additionalProperties")
        return f"map of {_type_text(values)}" if isinstance(values, dict) else "object"
    bounds = [
        f"{sign} {node[key]}"
        for key, sign in (
            ("minimum", "≥"),
            ("exclusiveMinimum", ">"),
            ("maximum", "≤"),
            ("exclusiveMaximum", "<"),
        )
        if key in node
    ]
    return " ".join([kind, *bounds])


def _default_text(prop: Mapping[str, Any], required: bool) -> str:
    if required:
        return "required"
    default = prop.get("default")
    if default is None or isinstance(default, dict):  # an object's defaults are listed key by key below
        return ""
    return f"`{json.dumps(default)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _model_rows(model: Mapping[str, Any]) -> Iterator[str]:
    required = set(model.get("required", []))
    for key, prop in model.get("properties", {}).items():
        description = prop.get("description", "")
        yield (
            f"| `{key}` | {_cell(_type_text(prop))} | {_cell(_default_text(prop, key in required))} | "
            f"{_cell(description)} |"
        )


def config_reference() -> str:
    """docs/config.md: every stack key, its type, its default and what it does, from the schema itself."""
    schema = _schema()
    lines = [
        "# Stack configuration reference",
        "",
        "<!-- Generated from colo/config/schema.py by `python -m colo.config.generate`; do not edit by hand. -->",
        "",
        "A stack file (`stacks/Pulumi.<stack>.yaml`) holds colo's keys under `config:`, each prefixed `colo:`.",
        "Every key is checked; an unknown one is an error that names its path. `colo schema` prints the stack",
        "file's JSON Schema, which editors use to complete and check stack files.",
        "",
        "| key | type | default | what it is |",
        "|---|---|---|---|",
    ]
    for key in CONFIG_KEYS:
        prop = schema["properties"][key]
        lines.append(
            f"| `{PROJECT}:{key}` | {_cell(_type_text(prop))} | {_cell(_default_text(prop, key == 'pairs'))} | "
            f"{_cell(prop.get('description', ''))} |"
        )
    for key in SECRET_KEYS:
        lines.append(f"| `{PROJECT}:{key}` | secret | | set with `pulumi config set --secret {key} VALUE` |")
    for name, model in sorted(schema["$defs"].items()):
        lines += ["", f"## {name}", ""]
        if model.get("description"):
            lines += [" ".join(model["description"].split()), ""]
        lines += ["| key | type | default | what it is |", "|---|---|---|---|", *_model_rows(model)]
    return "\n".join(lines) + "\n"


def _python_type(node: Mapping[str, Any]) -> str | None:
    """The annotation other languages' schema can carry for a property; None where it cannot (a union)."""
    if (ref := _ref(node)) is not None:
        return SERVER_TYPES.get(ref)
    if "anyOf" in node:
        return _union_type([option for option in node["anyOf"] if option.get("type") != "null"])
    kind = node.get("type")
    if kind == "array":
        item = _python_type(node.get("items", {}))
        return f"list[{item}]" if item else None
    if kind == "object" and isinstance(node.get("additionalProperties"), dict):
        value = _python_type(node["additionalProperties"])
        return f"dict[str, {value}]" if value else None
    return {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}.get(str(kind))


def _union_type(options: list[Mapping[str, Any]]) -> str | None:
    if len(options) == 1:
        return _python_type(options[0])
    # A switch with a named default (enforceEager: "auto" or a bool): the bool, the default when left out.
    named = [option for option in options if option.get("type") == "string"]
    if {option.get("type") for option in options} == {"boolean", "string"} and all(
        "const" in o for o in named
    ):
        return "bool"
    return None


def other_languages_types() -> str:
    """The TypedDicts of a server's keys for colo's component provider, one per schema model a server uses."""
    schema = _schema()
    out = [
        '"""A server\'s keys for colo\'s component in other languages (colo.components.multi_language).',
        "",
        "Generated from colo/config/schema.py by `python -m colo.config.generate`; do not edit by hand. Pulumi's",
        "component host infers the provider schema from these annotations, so they stay plain, evaluated types.",
        '"""',
        "",
        "from typing import NotRequired, TypedDict",
    ]
    for model, typed in reversed(SERVER_TYPES.items()):
        definition = schema["$defs"][model]
        python_names = {field.alias or name: name for name, field in _models()[model].model_fields.items()}
        required = set(definition.get("required", []))
        fields, left_out = [], []
        for key, prop in definition["properties"].items():
            annotation = _python_type(prop)
            if annotation is None:
                left_out.append(key)
                continue
            annotation = annotation if key in required else f"NotRequired[{annotation}]"
            fields.append(f"    {python_names[key]}: {annotation}")
        doc = " ".join((definition.get("description") or f"The stack schema's {model}.").split())
        out += ["", "", f"class {typed}(TypedDict):", f'    """{doc}"""', ""]
        if left_out:
            out.append(
                f"    # Not offered here: {', '.join(left_out)} (either of two types, which the schema cannot say)."
            )
        out += fields
    return "\n".join(out) + "\n"


def _models() -> dict[str, Any]:
    from colo.config import schema

    return {name: getattr(schema, name) for name in SERVER_TYPES}


def generated_files() -> dict[Path, str]:
    """Each generated file (relative to the repository) and what it must hold."""
    return {REFERENCE: config_reference(), OTHER_LANGUAGES: other_languages_types()}


def main(argv: list[str] | None = None) -> int:
    root = Path(argv[0]) if argv else Path.cwd()
    for path, text in generated_files().items():
        (root / path).write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
