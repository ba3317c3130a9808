"""Whether a pinned vLLM release's `vllm serve` accepts a command line, judged as that release's parser would.

The argument table of every release (serve_cli.yaml, read from each release's own parser by
scripts/extract-vllm-serve-cli.py) is turned back into a Python argparse parser with the same option strings,
arities, choices and type rules, and the command line goes through it after the rewriting the release's
FlexibleArgumentParser.parse_args does first (underscores, dotted JSON keys, `-O`). What comes back is the line
vLLM itself would print before exiting (`vllm: error: unrecognized arguments: ...`,
`vllm serve: error: argument --dtype: invalid choice: ...`), or None when the release would start parsing
successfully. Not mirrored, and so passed as they are: values whose type vLLM checks with pydantic
(`--compilation-config` and the other config dataclasses, kind `unchecked` in the table); what
FlexibleArgumentParser does with `--model` (refused from 0.8.3, moved to the front from 0.12) and `--config`
(a file read in the container), both of which colo refuses before this check (colo/plan/extra_args.py); and
the checks vLLM runs after parsing (cli_args.py::validate_parsed_serve_args).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, NoReturn

import yaml

from colo.vllm.rules import newest_range_from, release_key

TABLE_FILE = Path(__file__).with_name("serve_cli.yaml")
Nargs = int | str | None  # argparse's: None (one value), 0 (a switch), '?', '*', '+', or a count


@dataclass(frozen=True)
class TypeRule:
    """What one of the release's type functions accepts, and what argparse prints when it refuses a value."""

    kind: str  # int, float, json, human_readable_int(_or_auto), text, text_or_json_object, unchecked
    optional: bool = False  # "" and "None" read as None
    error: str | None = None  # with {value} / {value!r} for the refused value


@dataclass(frozen=True)
class OptionRule:
    strings: tuple[str, ...]  # every spelling argparse registered, in its order
    shown: tuple[str, ...]  # the spellings its messages name
    dest: str
    action: str
    nargs: Nargs = None
    type: str | None = None
    choices: tuple[Any, ...] | None = None
    choices_vary: bool = False  # the release builds them from an unordered set: a process takes one of two
    deprecated: str | None = None  # "warns", or the help text's sentence that says so


@dataclass(frozen=True)
class Rewriting:
    """How FlexibleArgumentParser.parse_args rewrites the command line; each value names a variant of its code."""

    underscores: str  # whole_name, whole_name_dotted (fold the whole name) or before_dot
    dotted_keys: str  # none, long (`--a.b`, value kept as text) or all (`-a.b` too, value read as JSON)
    dotted_values: str  # none, string, json_append (`key+`), json_or_int_append (and `1k`)
    o_attached: str  # -O<x>: kept, level, mode or optimization_level
    o_spaced: str  # -O <0-3>: kept, level, mode or optimization_level
    o_dotted: str  # -O.<key>: kept, compilation_config, cc or optimization_level
    help_search: str  # --help=<x>: none or help


@dataclass(frozen=True)
class ServeCli:
    """`vllm serve`'s arguments for one range of releases."""

    first: str
    last: str
    source: str
    allow_abbrev: bool
    positionals: tuple[tuple[str, Nargs], ...]
    top: tuple[str, ...]  # the `vllm` parser's own options (-h, -v)
    rewriting: Rewriting
    task_hint: str | None
    omni_exit: str | None  # what main() logs before exiting 1 on `--omni` without vllm-omni (0.20+)
    types: Mapping[str, TypeRule]
    options: Mapping[str, OptionRule]

    def label(self) -> str:
        return self.first if self.first == self.last else f"{self.first} to {self.last}"


@dataclass(frozen=True)
class ServeArgsRefusal:
    """What the release does with a command line it will not run."""

    message: str  # vLLM's own words: argparse's error line, or the exception it dies of
    exit_status: int  # 2 argparse error, 0 help printed (the server never starts), 1 a traceback
    index: int | None = None  # the extra argument the message is about, when it is one of them
    notes: tuple[str, ...] = field(default_factory=tuple)  # the release that has an unknown flag, ...

    def __str__(self) -> str:
        return "; ".join((self.message, *self.notes))


# ---------------------------------------------------------------- the table --------------------------------------


def _option(name: str, entry: Mapping[str, Any]) -> OptionRule:
    strings = (name, *entry.get("also", ()))
    choices = entry.get("choices")
    return OptionRule(
        strings=strings,
        shown=tuple(entry.get("shown", strings)),
        dest=entry["dest"],
        action=entry["action"],
        nargs=entry.get("nargs"),
        type=entry.get("type"),
        choices=None if choices is None else tuple(choices),
        choices_vary=entry.get("choices_vary", False),
        deprecated=entry.get("deprecated"),
    )


def _apply(table: dict[str, Any], part: Mapping[str, Any] | None) -> dict[str, Any]:
    """A later range's changes: `removed` names go, `changed` entries replace theirs in place, and each
    `added` one (new, or moved) goes after the option it names (first when None)."""
    if not part:
        return table
    removed = set(part.get("removed", ()))
    entries = [(k, v) for k, v in table.items() if k not in removed]
    changed = part.get("changed", {})
    entries = [(k, changed.get(k, v)) for k, v in entries]
    for name, entry in part.get("added", {}).items():
        entry = dict(entry)
        after = entry.pop("after", None)
        position = 0 if after is None else [k for k, _ in entries].index(after) + 1
        entries.insert(position, (name, entry))
    return dict(entries)


def parse_table(data: Mapping[str, Any]) -> tuple[ServeCli, ...]:
    """Every range of serve_cli.yaml, the first stated whole and each later one as its changes."""
    ranges = []
    parser: dict[str, Any] = {}
    types: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for index, entry in enumerate(data["releases"]):
        parser.update(entry.get("parser", {}))
        if index == 0:
            types, options = dict(entry["types"]), dict(entry["options"])
        else:
            types = _apply(types, entry.get("types"))
            options = _apply(options, entry.get("options"))
        ranges.append(
            ServeCli(
                first=str(entry["first"]),
                last=str(entry["last"]),
                source=entry["source"],
                allow_abbrev=parser["allow_abbrev"],
                positionals=tuple((p["dest"], p["nargs"]) for p in parser["positionals"]),
                top=tuple(parser["top"]),
                rewriting=Rewriting(**parser["rewriting"]),
                task_hint=parser["task_hint"],
                omni_exit=parser["omni_exit"],
                types={name: TypeRule(**rule) for name, rule in types.items()},
                options={name: _option(name, rule) for name, rule in options.items()},
            )
        )
    return tuple(ranges)


@cache
def serve_tables() -> tuple[ServeCli, ...]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return parse_table(yaml.load(TABLE_FILE.read_text(), Loader=loader))


def serve_cli(release: str) -> ServeCli:
    """The table of the range `release` falls in; a patch release past the newest range follows it.
    Raises ValueError for a release older than the first range or of a newer minor than the last."""
    tables = serve_tables()
    wanted = release_key(release)
    if wanted < release_key(tables[0].first) or wanted[:2] > release_key(tables[-1].last)[:2]:
        raise ValueError(
            f"vLLM {release} is outside the releases whose `vllm serve` arguments colo mirrors "
            f"({tables[0].first} to {tables[-1].last})"
        )
    return tables[newest_range_from(release, [table.first for table in tables])]


# ---------------------------------------------------------------- rewriting (FlexibleArgumentParser) ------------


class _Crash(Exception):
    """vLLM's own rewriting raises before argparse runs: the process dies with a traceback."""

    def __init__(self, error: str, arg: str) -> None:
        super().__init__(error)
        self.error = error
        self.arg = arg  # the argument (as rewritten) it failed on


_BEFORE_DOT = re.compile(r"(?<=--)[^\.]*")
_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def human_readable_int(value: str) -> int:
    """vLLM's reading of `1k` (1,000), `1K` (1,024), `25.6k`; a decimal with a binary suffix is refused.
    vllm/utils/argparse_utils.py::human_readable_int (vllm/engine/arg_utils.py before 0.12)."""
    value = value.strip()
    found = _HUMAN.fullmatch(value)
    if found:
        number, suffix = found.groups()
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix])
        try:
            return int(number) * _BINARY[suffix]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"Decimals are not allowed with binary suffixes like {suffix}. "
                f"Did you mean to use {number}{suffix.lower()} instead?"
            ) from None
    return int(value)


def _fold(arg: str, underscores: str) -> str:
    """`--max_model_len=8` -> `--max-model-len=8`: the whole name, or (0.9.1+) the part before the first `.`."""
    key, sep, value = arg.partition("=")
    if underscores == "before_dot":
        key = _BEFORE_DOT.sub(lambda found: found.group(0).replace("_", "-"), key, count=1)
    else:
        key = "--" + key[2:].replace("_", "-")
    return key + sep + value


def _o_value(arg: str) -> str:
    return arg[3:] if arg[2] == "=" else arg[2:]


def _rewrite_o(args: Sequence[str], i: int, rules: Rewriting) -> list[str] | None:
    """`-O3`, `-O=3`, `-O 3` and `-O.key` as the release rewrites them; None when it leaves the argument."""
    arg = args[i]
    attached = arg.startswith("-O") and arg != "-O"
    if attached and rules.o_attached != "kept" and (arg[2] != "." or rules.o_dotted == "optimization_level"):
        if rules.o_attached == "optimization_level":
            return ["--optimization-level", _o_value(arg)]
        return [f"-O.{rules.o_attached}={_o_value(arg)}"]
    spaced = arg == "-O" and i + 1 < len(args) and args[i + 1] in {"0", "1", "2", "3"}
    if spaced and rules.o_spaced != "kept":
        return ["--optimization-level" if rules.o_spaced == "optimization_level" else f"-O.{rules.o_spaced}"]
    if rules.o_dotted == "cc" and arg.startswith("-O."):
        return [arg.replace("-O", "-cc", 1)]
    return None


def _rewrite_one(args: Sequence[str], i: int, rules: Rewriting) -> list[str]:
    arg = args[i]
    if rules.help_search == "help" and arg.startswith("--help="):
        return ["--help"]
    if arg.startswith("--"):
        return [_fold(arg, rules.underscores)]
    return _rewrite_o(args, i, rules) or [arg]


def _merge(original: dict[str, Any], update: Mapping[str, Any], lists: bool) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(original.get(key), dict):
            _merge(original[key], value, lists)
        elif lists and isinstance(value, list) and isinstance(original.get(key), list):
            original[key] += value
        else:
            original[key] = value


def _dotted_value(text: str, rules: Rewriting) -> Any:
    if rules.dotted_keys == "long":
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        if rules.dotted_values == "json_or_int_append":
            try:
                return human_readable_int(text)
            except (ValueError, argparse.ArgumentTypeError):
                pass
        return text


def _dotted_entry(args: list[str], i: int, rules: Rewriting) -> tuple[str, str, bool] | None:
    """The dotted name and its text at `args[i]`, and whether the text was the next argument; None when
    `args[i]` is not a dotted argument for this release."""
    arg = args[i]
    if not (arg.startswith("--" if rules.dotted_keys == "long" else "-") and "." in arg):
        return None
    if "=" in arg:
        name, text = arg.split("=", 1)
        return None if "." not in name else (name, text, False)  # None: the `.` was in the value
    if i + 1 >= len(args):
        raise _Crash("IndexError: list index out of range", arg)  # vLLM reads args[i + 1] unguarded
    return arg, args[i + 1], True


def _dotted(args: list[str], rules: Rewriting) -> list[str]:
    """`--a.b 1` -> `--a '{"b": 1}'`, the merged JSON of every dotted argument appended at the end."""
    delete: set[int] = set()
    merged: dict[str, dict[str, Any]] = {}
    for i in range(len(args)):
        if rules.dotted_keys == "all" and i in delete:  # 0.9.0/0.9.1 do not skip a consumed value
            continue
        entry = _dotted_entry(args, i, rules)
        if entry is None:
            continue
        name, text, consumed_next = entry
        if consumed_next:
            delete.add(i + 1)
        if rules.dotted_values.endswith("_append") and name.endswith("+"):
            name, text = name[:-1], json.dumps(text.split(","))
        key, *keys = name.split(".")
        nested: Any = _dotted_value(text, rules)
        for part in reversed(keys):
            nested = {part: nested}
        _merge(merged.setdefault(key, {}), nested, lists=rules.dotted_keys == "all")
        delete.add(i)
    kept = [arg for i, arg in enumerate(args) if i not in delete]
    for key, value in merged.items():
        kept += [key, json.dumps(value)]
    return kept


def rewrite(args: Sequence[str], rules: Rewriting) -> list[str]:
    """What FlexibleArgumentParser.parse_args hands argparse for `args` (`serve` first)."""
    out: list[str] = []
    for i in range(len(args)):
        out += _rewrite_one(args, i, rules)
    return out if rules.dotted_keys == "none" else _dotted(out, rules)


# ---------------------------------------------------------------- argparse, rebuilt from the table --------------


class _Refused(Exception):
    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog
        self.message = message


class _Exited(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """argparse as vLLM uses it, raising instead of printing and exiting."""

    def error(self, message: str) -> NoReturn:
        raise _Refused(self.prog, message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise _Exited(status)


class _Exits(argparse.Action):
    """-h / --version: print and exit 0, before any server starts."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        parser.exit(0)


def _key_value_ints(value: str) -> dict[str, int]:
    """`image=2,video=1`, read as vllm 0.8.x engine/arg_utils.py::nullable_kvs reads it."""
    out = {}
    for item in value.split(","):
        parts = [part.lower().strip() for part in item.split("=")]
        if len(parts) != 2:
            raise argparse.ArgumentTypeError("Each item should be in the form KEY=VALUE")
        key, number = parts
        try:
            out[key] = int(number)
        except ValueError:
            raise argparse.ArgumentTypeError(f"Failed to parse value of item {key}={number}") from None
    return out


def _matches(kind: str, value: str) -> Any:
    """The value read as `kind`; raises ValueError where vLLM's type function would refuse it."""
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    if kind == "json":
        return json.loads(value)
    if kind.startswith("human_readable_int"):
        if kind.endswith("_or_auto") and (value.strip() == "-1" or value.strip().lower() == "auto"):
            return -1
        return human_readable_int(value)
    if kind == "text_or_json_object" and re.match(r"(?s)^\s*{.*}\s*$", value):
        return json.loads(value)
    if kind == "key_value_ints":
        return _key_value_ints(value)
    return value  # text, and the kinds not mirrored (pydantic-checked config dataclasses)


def _converter(name: str, rule: TypeRule) -> Callable[[str], Any]:
    def convert(value: str) -> Any:
        if rule.optional and value in ("", "None"):
            return None
        try:
            return _matches(rule.kind, value)
        except argparse.ArgumentTypeError:
            raise  # the function's own words (human_readable_int, nullable_kvs)
        except ValueError:
            if rule.error is None:
                raise
            message = rule.error.replace("{value!r}", repr(value)).replace("{value}", value)
            raise argparse.ArgumentTypeError(message) from None

    convert.__name__ = name
    return convert


def _add_option(parser: argparse.ArgumentParser, option: OptionRule, types: Mapping[str, TypeRule]) -> None:
    if option.action in ("help", "version"):
        action = parser.add_argument(*option.strings, action=_Exits)
    elif option.nargs == 0:
        action = parser.add_argument(*option.strings, dest=option.dest, action="store_true")
    else:
        rule = types.get(option.type) if option.type else None
        checked = rule is None or rule.kind != "unchecked"
        kwargs: dict[str, Any] = {"dest": option.dest, "nargs": option.nargs}
        if option.type and rule:
            kwargs["type"] = _converter(option.type, rule)
        if checked:
            kwargs["choices"] = option.choices
        action = parser.add_argument(*option.strings, **kwargs)
    action.option_strings = list(option.shown)  # vLLM hides some spellings from its messages


_PARSERS: dict[str, _Parser] = {}  # by range, built on first use


def _build(table: ServeCli) -> _Parser:
    if table.first not in _PARSERS:
        _PARSERS[table.first] = _parser_for(table)
    return _PARSERS[table.first]


def _parser_for(table: ServeCli) -> _Parser:
    top = _Parser(prog="vllm", add_help=False)
    for string in table.top:
        top.add_argument(string, action=_Exits)
    commands = top.add_subparsers(dest="subparser", required=False)
    serve = commands.add_parser("serve", add_help=False, allow_abbrev=table.allow_abbrev)
    for dest, nargs in table.positionals:
        serve.add_argument(dest, nargs=nargs)
    for option in table.options.values():
        _add_option(serve, option, table.types)
    return top


# ---------------------------------------------------------------- the check -------------------------------------


def _name_of(arg: str, rules: Rewriting) -> str:
    """The option name an argument spells, as the release folds it (`--max_model_len=8` -> `--max-model-len`)."""
    if not arg.startswith("--"):
        return arg.split("=", 1)[0]
    name = _fold(arg, rules.underscores).split("=", 1)[0]
    return name.split(".", 1)[0] if rules.dotted_keys != "none" else name


def _selects(arg: str, option: OptionRule, table: ServeCli) -> bool:
    """Whether `arg` spells `option` for argparse: exactly, as an unambiguous prefix, or `-xVALUE`."""
    name = _name_of(arg, table.rewriting)
    for string in option.strings:
        if name == string:
            return True
        if name.startswith("--") and table.allow_abbrev and len(name) > 2 and string.startswith(name):
            return True
        if not name.startswith("--") and len(string) == 2 and name.startswith(string):
            return True
    return False


def exact_option(arg: str, table: ServeCli) -> OptionRule | None:
    """The option `arg` names in full (after the release's rewriting), which argparse takes over any option
    the same text abbreviates; None when it names none exactly."""
    if not arg.startswith("-") or arg in ("-", "--"):
        return None
    name = _name_of(arg, table.rewriting)
    return next((o for o in table.options.values() if name in o.strings), None)


def options_selected(arg: str, table: ServeCli) -> tuple[OptionRule, ...]:
    """The options argparse may read `arg` as: the one it names exactly, else every option it abbreviates or
    names with an attached value (argparse takes a unique one and refuses an ambiguous prefix)."""
    if not arg.startswith("-") or arg in ("-", "--"):
        return ()
    exact = exact_option(arg, table)
    if exact is not None:
        return (exact,)
    name = _name_of(arg, table.rewriting)
    found = []
    for option in table.options.values():
        if _selects(arg, option, table) or (
            not name.startswith("--") and len(name) > 1 and any(s.startswith(name) for s in option.strings)
        ):
            found.append(option)
    return tuple(found)


def _index_for_option(display: str, extra: Sequence[str], table: ServeCli) -> int | None:
    """The first extra argument that selects the option argparse names as `display` (`--a/--b`)."""
    wanted = display.split("/")
    option = next((o for o in table.options.values() if list(o.shown) == wanted), None)
    if option is None:
        return None
    return next((i for i, arg in enumerate(extra) if _selects(arg, option, table)), None)


def _index_for_token(token: str, extra: Sequence[str], rules: Rewriting) -> int | None:
    """The extra argument an unrecognized token came from (as written, folded, or its dotted option)."""
    for i, arg in enumerate(extra):
        if token in (arg, _fold(arg, rules.underscores) if arg.startswith("--") else arg):
            return i
        if arg.startswith("-") and "." in arg and _name_of(arg, rules) == token:
            return i
    return None


def _release_notes(name: str, release: str) -> tuple[str, ...]:
    """For an option the pinned release lacks: the release that brings it, or the last one that had it."""
    wanted = release_key(release)
    having = [t for t in serve_tables() if any(name in o.strings for o in t.options.values())]
    later = [t for t in having if release_key(t.first) > wanted]
    earlier = [t for t in having if release_key(t.last) < wanted]
    notes = []
    if earlier:
        notes.append(f"{name} was removed after vLLM {earlier[-1].last}")
    if later:
        notes.append(f"{name} arrives in vLLM {later[0].first}")
    return tuple(notes)


def _unrecognized(
    table: ServeCli, release: str, tokens: list[str], argv: Sequence[str], extra: Sequence[str]
) -> ServeArgsRefusal:
    message = f"vllm: error: unrecognized arguments: {' '.join(tokens)}"
    asked_task = any(re.match(r"^--task(=.+|$)", arg) for arg in argv[1:])
    if table.task_hint and asked_task and re.search(r"(^|\s)--task(=|\s|$)", message):
        message += "\n\n" + table.task_hint
    notes: list[str] = []
    for token in tokens:
        if token.startswith("-") and token not in ("-", "--"):
            notes += _release_notes(_name_of(token, table.rewriting), release)
    index = next((i for t in tokens if (i := _index_for_token(t, extra, table.rewriting)) is not None), None)
    return ServeArgsRefusal(message, 2, index, tuple(dict.fromkeys(notes)))


def _argparse_refusal(
    table: ServeCli, release: str, refused: _Refused, extra: Sequence[str]
) -> ServeArgsRefusal:
    notes: tuple[str, ...] = ()
    found = re.match(r"argument (\S+): ", refused.message)
    if found:
        index = _index_for_option(found.group(1), extra, table)
        option = next((o for o in table.options.values() if "/".join(o.shown) == found.group(1)), None)
        if option is not None and option.choices_vary and "invalid choice" in refused.message:
            notes = (
                f"vLLM {release} builds the choices of {option.strings[0]} from an unordered set: each process "
                f"accepts one of two lists, and neither holds this value",
            )
    else:
        token = re.match(r"ambiguous option: (\S+?)(=\S*)? could match", refused.message)
        index = _index_for_token(token.group(1), extra, table.rewriting) if token else None
    return ServeArgsRefusal(f"{refused.prog}: error: {refused.message}", 2, index, notes)


def deprecation_notes(release: str, extra_args: Sequence[object]) -> tuple[str, ...]:
    """What vLLM `release` says of the deprecated options among `extra_args` (it still accepts them)."""
    table = serve_cli(release)
    notes = []
    for arg in extra_args:
        if not isinstance(arg, str) or not arg.startswith("-"):
            continue
        for option in table.options.values():
            if option.deprecated and _selects(arg, option, table):
                said = (
                    "warns that it is deprecated"
                    if option.deprecated == "warns"
                    else f"says in its help: {option.deprecated.removeprefix('help: ')}"
                )
                notes.append(f"{option.strings[0]}: vLLM {release} {said}")
    return tuple(dict.fromkeys(notes))


def _non_string(extra: Sequence[object]) -> ServeArgsRefusal | None:
    for i, arg in enumerate(extra):
        if not isinstance(arg, str):
            kind = {bool: "boolean", int: "number", float: "number"}.get(type(arg), type(arg).__name__)
            return ServeArgsRefusal(
                f"extra argument {arg!r} is a YAML {kind}, not a string: a container's arguments are strings, "
                f"so quote it ('{arg}') if vLLM is meant to read it",
                2,
                i,
            )
    return None


def serve_args_refusal(
    release: str, extra_args: Sequence[object], colo_args: Sequence[str]
) -> ServeArgsRefusal | None:
    """What vLLM `release` does with `vllm serve <colo_args> <extra_args>` when it will not start; None when
    its parser accepts the line. `colo_args` starts with the model, as colo passes it."""
    refused = _non_string(extra_args)
    if refused is not None:
        return refused
    extra = [str(arg) for arg in extra_args]
    table = serve_cli(release)
    argv = ["serve", *colo_args, *extra]
    if table.omni_exit and "--omni" in argv:  # main() looks for it before any parsing
        return ServeArgsRefusal(table.omni_exit, 1, extra.index("--omni") if "--omni" in extra else None)
    try:
        rewritten = rewrite(argv, table.rewriting)
        _, tokens = _build(table).parse_known_args(rewritten)
    except _Crash as crash:
        return ServeArgsRefusal(
            f"FlexibleArgumentParser.parse_args raises {crash.error}: it reads '{crash.arg}' as a dotted "
            "JSON key and finds no value after it",
            1,
            _index_for_token(crash.arg, extra, table.rewriting),
        )
    except _Exited as exited:
        helps = [o for o in table.options.values() if o.action == "help"]
        index = next((i for i, a in enumerate(extra) for o in helps if _selects(a, o, table)), None)
        return ServeArgsRefusal(
            "vllm serve prints its help and exits before the server starts", exited.status, index
        )
    except _Refused as refused_:
        return _argparse_refusal(table, release, refused_, extra)
    if tokens:
        return _unrecognized(table, release, tokens, argv, extra)
    return None
