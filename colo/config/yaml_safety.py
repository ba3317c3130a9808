"""Load a stack file's YAML with bounds, so that no input hangs colo, exhausts its memory or is misread.

PyYAML's safe loader refuses arbitrary objects but still accepts what hurts a program that walks the
result: aliases that expand exponentially ("billion laughs": a few hundred bytes that become 10^9 nodes once
serialised or validated), an alias inside its own anchor (a cycle), nesting deep enough to exhaust Python's
recursion, and duplicate keys, of which YAML silently keeps the last. Before anything is built, the event
stream (produced without recursion) is walked once to bound the depth and the size every alias expands to;
the loader that then builds the values refuses duplicate keys, naming both lines.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    ScalarEvent,
)

from colo.echo import shown

MAX_DEPTH = 32  # a stack file nests about 7 levels deep
MAX_NODES = 50_000  # after alias expansion; a 100-pair stack file holds about 4,000

_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class UnsafeYaml(ValueError):
    """The YAML is refused; the message says why (and where, when a line is known)."""


def _line(event: yaml.Event | yaml.Node) -> int:
    return int(event.start_mark.line) + 1 if event.start_mark else 0


def check_shape(text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH, more than MAX_NODES nodes once aliases are expanded, and an
    alias used inside the node it names."""
    open_nodes: list[list[Any]] = []  # [anchor, expanded size so far] of every collection being read
    sizes: dict[str, int] = {}  # anchor -> expanded size of the node it names
    total = 0
    for event in yaml.parse(text, Loader=_SafeLoader):
        if isinstance(event, CollectionStartEvent):
            open_nodes.append([event.anchor, 1])
            if len(open_nodes) > MAX_DEPTH:
                raise UnsafeYaml(f"nested more than {MAX_DEPTH} levels deep (line {_line(event)})")
            continue
        if isinstance(event, CollectionEndEvent):
            anchor, size = open_nodes.pop()
        elif isinstance(event, ScalarEvent):
            anchor, size = event.anchor, 1
        elif isinstance(event, AliasEvent):
            if any(node[0] == event.anchor for node in open_nodes):
                raise UnsafeYaml(
                    f"the alias *{event.anchor} on line {_line(event)} refers to a node that contains it "
                    "(a cycle)"
                )
            anchor, size = None, sizes.get(str(event.anchor), 1)
        else:
            continue
        if anchor is not None:
            sizes[str(anchor)] = size
        if open_nodes:
            open_nodes[-1][1] += size
            size = open_nodes[-1][1]
        else:
            total += size
            size = total
        if size > MAX_NODES:
            raise UnsafeYaml(
                f"its aliases expand to more than {MAX_NODES} values (line {_line(event)}); a stack file "
                "needs a few thousand at most"
            )


class _StrictLoader(_SafeLoader):  # type: ignore[misc, valid-type]
    """The safe loader, refusing a key given twice in one mapping (merged `<<` keys may be overridden)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[tuple[str, str], int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = (key_node.tag, key_node.value)
            if key in seen:
                raise UnsafeYaml(
                    f"the key '{shown(key_node.value)}' is given twice in one mapping, on lines {seen[key]} and "
                    f"{_line(key_node)}; YAML would keep only the last, so remove one"
                )
            seen[key] = _line(key_node)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def load_yaml(text: str) -> Any:
    """The value of one YAML document, refused (UnsafeYaml) when it could hang or mislead colo."""
    try:
        check_shape(text)
        return yaml.load(text, Loader=_StrictLoader)  # a subclass of the safe loader
    except yaml.YAMLError as exc:
        raise UnsafeYaml(f"not valid YAML: {' '.join(str(exc).split())}") from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4,300 digits
        if isinstance(exc, UnsafeYaml):
            raise
        raise UnsafeYaml(f"a value colo cannot read: {str(exc)[:120]}") from None
