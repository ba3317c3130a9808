#!/usr/bin/env python3
"""Derive `vllm serve`'s argument table, release by release, by building each release's own parser.

For every release colo mirrors, the release's wheel is downloaded from PyPI (`pip download --no-deps`), its
Python sources are unpacked into a cache outside the repository and the wheel is deleted. A child process then
runs that release's own code the way `vllm serve` does (vllm/entrypoints/cli/main.py::main: a
FlexibleArgumentParser, its subparsers, and the serve command's `subparser_init`, which calls
vllm/entrypoints/openai/cli_args.py::make_arg_parser and EngineArgs/AsyncEngineArgs.add_cli_args), on the CUDA
platform the official images run on. Only the packages the parser cannot be built without are real (pydantic,
PyYAML, typing_extensions); torch, transformers, the compiled extensions and every other third-party import
are inert stand-ins, since none of them defines an argument. A vLLM module that cannot run on stand-ins
(kernel registries, MoE layers) keeps what it defined and is listed in the run's output; the modules that
define or rewrite arguments may not fail. The child then reads the finished parser: every option string
argparse registered (aliases, `--no-` twins, hidden spellings) in argparse's order, nargs, action, choices,
deprecation, and each type function's behaviour (tried on sample values). It feeds the release's own
FlexibleArgumentParser.parse_args a fixed set of probes to learn how it rewrites arguments before argparse
sees them (underscores, dotted JSON keys, `-O`), and records what the release's parser says for every line of
tests/vllm/serve_cli_corpus.yaml, which the test suite holds colo's checker to.

Usage: scripts/extract-vllm-serve-cli.py [--cache DIR]
Reads every release of RELEASES and writes colo/vllm/serve_cli.yaml (ranges of releases whose table is the
same) and tests/vllm/serve_cli_oracle.json (each release's verdict on the corpus).
       scripts/extract-vllm-serve-cli.py --releases 0.34.0
Reads only the releases named, each newer than the newest one the committed table holds, and appends them to
the committed table and oracle (the older ranges are read back from the files, not re-extracted).
       scripts/extract-vllm-serve-cli.py --releases 0.8.5 --verify-with VENV/bin/python
Checks the stand-ins against a real import: VENV holds `vllm==0.8.5` installed with its dependencies (torch
included). Both readings run on vLLM's CPU platform (a real CUDA platform needs a GPU driver at import); the
real parser's table and corpus verdicts must equal the stand-in reading's.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
import typing
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TABLE = REPO / "colo" / "vllm" / "serve_cli.yaml"
CORPUS = REPO / "tests" / "vllm" / "serve_cli_corpus.yaml"
ORACLE = REPO / "tests" / "vllm" / "serve_cli_oracle.json"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "colo" / "vllm-sources"

# Every final release on PyPI from 0.8.0 to 0.34.0 (`pip index versions vllm`), oldest first.
RELEASES = [
    "0.8.0",
    "0.8.1",
    "0.8.2",
    "0.8.3",
    "0.8.4",
    "0.8.5",
    "0.8.5.post1",
    "0.9.0",
    "0.9.0.1",
    "0.9.1",
    "0.9.2",
    "0.10.0",
    "0.10.1",
    "0.10.1.1",
    "0.10.2",
    "0.11.0",
    "0.11.1",
    "0.11.2",
    "0.12.0",
    "0.13.0",
    "0.14.0",
    "0.14.1",
    "0.15.0",
    "0.15.1",
    "0.16.0",
    "0.17.0",
    "0.17.1",
    "0.18.0",
    "0.18.1",
    "0.19.0",
    "0.19.1",
    "0.20.0",
    "0.20.1",
    "0.20.2",
    "0.21.0",
    "0.22.0",
    "0.22.1",
    "0.23.0",
    "0.24.0",
    "0.25.0",
    "0.25.1",
    "0.26.0",
    "0.27.0",
    "0.27.1",
    "0.28.0",
    "0.29.0",
    "0.30.0",
    "0.31.0",
    "0.32.0",
    "0.33.0",
    "0.34.0",
]

# What colo passes before any extraArgs (colo/plan/vllm_args.py::vllm_arguments, a generate server).
MODEL = "/models/llm"
COLO_ARGS = [
    "--served-model-name", "llm", "--host", "0.0.0.0", "--port", "8000",
    "--gpu-memory-utilization", "0.9", "--max-model-len", "4096", "--max-num-seqs", "64",
    "--max-num-batched-tokens", "8192",
]  # fmt: skip


# ---------------------------------------------------------------- sources -----------------------------------


def _pip() -> list[str]:
    """pip of this interpreter, else the one on PATH (a uv-made venv has none)."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    found = shutil.which("pip3") or shutil.which("pip")
    if found is None:
        raise SystemExit("pip is needed to download the releases' wheels")
    return [found]


def fetch_sources(release: str, cache: Path) -> Path:
    """The release's Python sources and dist-info, unpacked from its PyPI wheel (cached by release)."""
    target = cache / release
    if (target / "wheel.json").exists():
        return target
    with tempfile.TemporaryDirectory() as download:
        subprocess.run(
            [*_pip(), "download", f"vllm=={release}", "--no-deps", "--only-binary", ":all:",
             "--quiet", "--progress-bar", "off", "-d", download],
            check=True,
        )  # fmt: skip
        (wheel,) = Path(download).glob("vllm-*.whl")
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        target.mkdir(parents=True, exist_ok=True)
        compiled = []
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if name.endswith(".py") or ".dist-info/" in name:
                    archive.extract(name, target)
                elif name.startswith("vllm/") and ".so" in name:
                    compiled.append(name.split(".", 1)[0].replace("/", "."))
        (target / "wheel.json").write_text(
            json.dumps({"wheel": wheel.name, "sha256": digest, "compiled": sorted(compiled)}, indent=1)
        )
    return target


# ---------------------------------------------------------------- the child: stand-ins -----------------------

# Real packages: the parser's definitions go through them (pydantic config dataclasses, YAML config files).
REAL = {"pydantic", "pydantic_core", "typing_extensions", "annotated_types", "typing_inspection", "yaml"}
SHIMS = {"regex": "re"}  # vLLM's argument code uses `regex` only for what `re` does identically


class _Stand(type):
    """A class standing for anything a third-party module exports: attributes, calls, subscripts, bases."""

    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any], **_: Any) -> _Stand:
        return super().__new__(mcs, name, bases, ns)

    def __init__(cls, name: str, bases: tuple[type, ...], ns: dict[str, Any], **_: Any) -> None:
        super().__init__(name, bases, ns)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return stand_in(f"{cls.__qualname__}.{name}")

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls.__module__ != "stand_in":  # a real class deriving from a stand-in
            return type.__call__(cls, *args, **kwargs)
        if len(args) == 1 and not kwargs and isinstance(args[0], types.FunctionType):
            return args[0]  # used as a decorator: keep the function
        return stand_in(f"{cls.__qualname__}()")

    def __getitem__(cls, _: Any) -> Any:
        return cls

    def __or__(cls, other: Any) -> Any:  # `torch.dtype | Literal[...]` keeps the Literal (its choices)
        return typing.Union[cls, other]  # noqa: UP007 (the operator is what is being defined)

    def __ror__(cls, other: Any) -> Any:
        return typing.Union[other, cls]  # noqa: UP007

    def __iter__(cls) -> Iterator[Any]:
        return iter(())

    def __len__(cls) -> int:
        return 0

    def __bool__(cls) -> bool:
        return False

    def __int__(cls) -> int:
        return 0

    __index__ = __int__

    def __float__(cls) -> float:
        return 0.0

    def __lt__(cls, _: Any) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __contains__(cls, _: Any) -> bool:
        return False

    def __enter__(cls) -> Any:
        return cls

    def __exit__(cls, *_: Any) -> bool:
        return False

    def __add__(cls, _: Any) -> Any:
        return cls

    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __floordiv__ = __mod__ = __add__

    def __neg__(cls) -> Any:
        return cls

    def __hash__(cls) -> int:
        return hash(cls.__qualname__)

    def __eq__(cls, other: object) -> bool:  # stand-ins made the same way are equal (schemas compared)
        return (
            isinstance(other, _Stand)
            and other.__module__ == "stand_in"
            and other.__qualname__ == cls.__qualname__
        )

    def __instancecheck__(cls, _: Any) -> bool:
        return False

    def __repr__(cls) -> str:
        return f"<stand-in {cls.__qualname__}>"


def _pydantic_schema(cls: Any, source: Any, handler: Any) -> Any:
    from pydantic_core import core_schema

    return core_schema.any_schema()


def _any_attribute(self: Any, name: str) -> Any:
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    return stand_in(name)


def stand_in(name: str) -> Any:
    namespace = {
        "__module__": "stand_in",
        "__init_subclass__": classmethod(lambda cls, **_: None),
        "__init__": lambda self, *a, **k: None,
        "__getattr__": _any_attribute,
        "__get_pydantic_core_schema__": classmethod(_pydantic_schema),
    }
    return _Stand(name, (), namespace)


class StandInModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = stand_in(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


# Modules whose code defines or rewrites arguments: these must run as released, never be stood in for.
DEFINING = {"vllm.engine.arg_utils", "vllm.entrypoints.openai.cli_args", "vllm.utils", "vllm.utils.argparse_utils",
            "vllm.entrypoints.cli.serve", "vllm.config"}  # fmt: skip


class _Tolerant(importlib.abc.Loader):
    """Runs a vLLM module; one that cannot run on stand-ins (kernel registries, workers) keeps what it defined
    so far and answers every other name with a stand-in. Each such module is recorded with its error."""

    def __init__(self, loader: Any, replaced: dict[str, str]) -> None:
        self.loader = loader
        self.replaced = replaced

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        module: types.ModuleType | None = self.loader.create_module(spec)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        try:
            self.loader.exec_module(module)
        except Exception as exc:
            if module.__name__ in DEFINING or module.__name__.startswith("vllm.config."):
                raise
            self.replaced[module.__name__] = f"{type(exc).__name__}: {str(exc)[:160]}"
            module.__class__ = StandInModule


PLATFORMS = {"cuda": "vllm.platforms.cuda.CudaPlatform", "cpu": "vllm.platforms.cpu.CpuPlatform"}


class _Platform(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The official images run on CUDA: as soon as vllm.platforms is executed, it resolves the platform as its
    CUDA plugin would on a GPU machine (this one has none), before any module asks for current_platform. The
    check against a real import uses the CPU platform on both sides (a real CUDA platform queries the GPU)."""

    def __init__(self, name: str) -> None:
        self.qualname = PLATFORMS[name]

    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "vllm.platforms":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None:
            self.loader, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        module: types.ModuleType | None = self.loader.create_module(spec)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        self.loader.exec_module(module)
        qualname = self.qualname
        module.resolve_current_platform_cls_qualname = lambda: qualname  # type: ignore[attr-defined]


class _NoDriver(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """For a real import on a machine without a GPU driver: vLLM's compiled extensions (which link libcuda)
    become stand-ins; every Python module, vLLM's and its dependencies', is the installed one."""

    def __init__(self) -> None:
        self.stood_in: list[str] = []

    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("vllm."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not (spec.origin or "").endswith(".so"):
            return None
        self.stood_in.append(fullname)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=False)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return StandInModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Third-party imports and the release's compiled extensions become stand-in modules."""

    def __init__(self, compiled: set[str], versions: dict[str, str]) -> None:
        self.compiled = compiled
        self.versions = versions
        self.replaced: dict[str, str] = {}

    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname.split(".")[0]
        if top == "vllm":
            if fullname in self.compiled:
                return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is not None and spec.loader is not None and fullname != "vllm":
                spec.loader = _Tolerant(spec.loader, self.replaced)
            return spec
        if top in sys.stdlib_module_names or top in REAL or top.startswith("_distutils"):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if spec.name in SHIMS:
            return importlib.import_module(SHIMS[spec.name])
        module = StandInModule(spec.name)
        module.__path__ = []
        module.__file__ = f"/stand-in/{spec.name.replace('.', '/')}/__init__.py"
        module.__version__ = self.versions.get(spec.name, "0.0.0")
        if spec.name == "torch":  # protocol.py asserts torch.iinfo(torch.long) at import
            module.iinfo = lambda _: types.SimpleNamespace(min=-(2**63), max=2**63 - 1, bits=64)  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def _pinned_versions(sources: Path) -> dict[str, str]:
    """`==` pins of the release's requirements (torch above all), for code that compares versions."""
    (metadata,) = sources.glob("vllm-*.dist-info/METADATA")
    pins = {}
    for line in metadata.read_text().splitlines():
        found = re.match(r"Requires-Dist: ([A-Za-z0-9_.-]+) ?\(?==([0-9][^;,) ]*)", line)
        if found and "extra ==" not in line:
            pins[found.group(1).replace("-", "_")] = found.group(2)
    return pins


def _answer_versions_of_stand_ins(finder: StandInFinder) -> None:
    """importlib.metadata.version() of a stood-in package (torch) answers the release's pin, as installed."""
    import importlib.metadata as metadata

    real = metadata.version

    def version(name: str) -> str:
        try:
            return real(name)
        except metadata.PackageNotFoundError:
            if name.replace("-", "_") in sys.stdlib_module_names or name == "vllm":
                raise
            return finder.versions.get(name.replace("-", "_"), "0.0.0")

    metadata.version = version


def _bare_vllm_package(sources: Path, release: str) -> None:
    """Import `vllm` the way the release does when its __init__ is lazy; else an empty package whose names
    resolve, on first use, through the imports its __init__ lists (the eager ones load the whole engine)."""
    init = (sources / "vllm" / "__init__.py").read_text()
    if "MODULE_ATTRS" in init:
        importlib.import_module("vllm")
        return
    names = {}
    for node in ast.walk(ast.parse(init)):
        if isinstance(node, ast.ImportFrom) and node.module:
            module = node.module if node.level == 0 else "vllm." + node.module
            names.update({alias.asname or alias.name: (module, alias.name) for alias in node.names})
    package = types.ModuleType("vllm")
    package.__path__ = [str(sources / "vllm")]
    package.__version__ = release  # type: ignore[attr-defined]

    def lookup(name: str) -> Any:
        if name not in names:
            raise AttributeError(name)
        module, attribute = names[name]
        return getattr(importlib.import_module(module), attribute)

    package.__getattr__ = lookup  # type: ignore[method-assign]
    sys.modules["vllm"] = package


def _flexible_parser_class() -> Any:
    for module in ("vllm.utils.argparse_utils", "vllm.utils"):
        with contextlib.suppress(ImportError, AttributeError):
            return importlib.import_module(module).FlexibleArgumentParser
    raise SystemExit("no FlexibleArgumentParser in vllm.utils or vllm.utils.argparse_utils")


COMPETING_CHOICES: list[frozenset[Any]] = []


def _union_of_competing_literals() -> None:
    """vLLM turns a dataclass field into an option from a *set* of type hints (engine/arg_utils.py::get_kwargs,
    0.8.5+); where two Literals compete (a Union of two), `get_type` takes whichever the set yields first, and
    the set's order follows type objects' hashes (their addresses): a process may accept either list. Read both:
    the option gets the union, and is marked as varying between processes."""
    arg_utils = importlib.import_module("vllm.engine.arg_utils")
    if not hasattr(arg_utils, "get_type"):
        return
    from typing import Literal, get_args

    first_match = arg_utils.get_type

    def get_type(type_hints: Any, kind: Any) -> Any:
        matches = [hint for hint in type_hints if arg_utils.is_type(hint, kind)]
        if len(matches) < 2:
            return first_match(type_hints, kind)
        if kind is not Literal:
            raise SystemExit(f"{len(matches)} {kind} hints compete in get_kwargs: {matches}")
        union = tuple(dict.fromkeys(arg for hint in sorted(matches, key=repr) for arg in get_args(hint)))
        COMPETING_CHOICES.append(frozenset(union))
        return Literal[union]

    arg_utils.get_type = get_type


def build_parser(release: str) -> tuple[Any, Any]:
    """The release's `vllm` parser with its `serve` subcommand, as vllm/entrypoints/cli/main.py::main makes it."""
    _union_of_competing_literals()
    serve = importlib.import_module("vllm.entrypoints.cli.serve")
    parser = _flexible_parser_class()(description="vLLM CLI")
    parser.add_argument("-v", "--version", action="version", version=release)
    subparsers = parser.add_subparsers(required=False, dest="subparser")
    for command in serve.cmd_init():
        command.subparser_init(subparsers).set_defaults(dispatch_function=command.cmd)
    return parser, subparsers.choices["serve"]


# ---------------------------------------------------------------- the child: reading the parser ---------------

_ACTIONS = {
    "_StoreAction": "store",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "_StoreConstAction": "store_const",
    "_AppendAction": "append",
    "_CountAction": "count",
    "_HelpAction": "help",
    "_VersionAction": "version",
    "BooleanOptionalAction": "boolean_optional",
    "EnableDisableAction": "enable_disable",
}


def _plain(value: Any) -> Any:
    """A choice as YAML can hold it (ints, strings and None stay what argparse compares)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _deprecation(action: Any, deprecated: set[Any]) -> str | None:
    if action in deprecated or getattr(action, "deprecated", False):
        return "warns"  # FlexibleArgumentParser (or argparse on 3.13) logs "argument '...' is deprecated"
    text = " ".join(str(action.help or "").split())
    # the sentence of the help text that says the option itself is deprecated
    said = r"\[DEPRECATED\]|\bis deprecated\b|\bdeprecated and\b|\bdeprecated in favou?r\b|\bdeprecated[;,] use\b"
    for sentence in re.split(r"(?<=\.)\s+", text):
        if re.search(said, sentence, re.IGNORECASE):
            return f"help: {sentence[:240]}"
    return None


def _type_name(convert: Any) -> str:
    """A type function's name, with the functions a wrapper closes over: `_optional_type(int)`."""
    name = getattr(convert, "__name__", type(convert).__name__)
    inner = [
        _type_name(cell.cell_contents)
        for cell in getattr(convert, "__closure__", None) or ()
        if callable(cell.cell_contents) and not isinstance(cell.cell_contents, _Stand)
    ]
    return f"{name}({','.join(inner)})" if inner else name


# Values each type function is tried on; which of them it accepts names its kind (below).
TYPE_SAMPLES = ("7", "-7", "7.5", "7k", "7K", "{}", "[1]", "true", "x", "auto", "{x}", "a=7")
OPTIONAL_SAMPLES = ("", "None")
KINDS = {
    "int": {"7", "-7"},
    "float": {"7", "-7", "7.5"},
    "json": {"7", "-7", "7.5", "{}", "[1]", "true"},
    "human_readable_int": {"7", "-7", "7k", "7K"},
    "human_readable_int_or_auto": {"7", "-7", "7k", "7K", "auto"},
    "key_value_ints": {"a=7"},  # nullable_kvs: KEY=INT,KEY=INT
    "text": set(TYPE_SAMPLES),
    "text_or_json_object": set(TYPE_SAMPLES) - {"{x}"},  # a value in braces must be a JSON object
}
BAD = "BAD-VALUE"  # a value only a text type accepts: its error message is the type's error template


def _argparse_error(convert: Any, value: str) -> str | None:
    """What argparse says when `convert` refuses `value` (argparse.ArgumentParser._get_value), or None."""
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            convert(value)
    except argparse.ArgumentTypeError as exc:
        return str(exc)
    except (TypeError, ValueError):
        name = getattr(convert, "__name__", repr(convert))
        return f"invalid {name} value: {value!r}"
    except Exception as exc:  # argparse lets anything else through: the process dies with a traceback
        return f"raises {type(exc).__name__}"
    return None


def _converted(convert: Any, value: str) -> Any:
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            return convert(value)
    except Exception:
        return BAD


def type_behaviour(convert: Any) -> dict[str, Any]:
    """A type function's kind (by the samples it accepts), whether it maps "" and "None" to None, and the
    message argparse prints when it refuses a value ({value} and {value!r} stand for the value)."""
    accepted = {sample for sample in TYPE_SAMPLES if _argparse_error(convert, sample) is None}
    kind = next((name for name, accepts in KINDS.items() if accepts == accepted), "unchecked")
    if kind == "text" and _converted(convert, "x") != "x":  # text, but not kept as written: not modelled
        kind = "unchecked"
    behaviour: dict[str, Any] = {"kind": kind}
    if all(_converted(convert, sample) is None for sample in OPTIONAL_SAMPLES):
        behaviour["optional"] = True  # "" and "None" read as None (choices may hold None)
    error = _argparse_error(convert, BAD)
    if kind == "text_or_json_object":
        error = _argparse_error(convert, "{" + BAD + "}")
    if error is not None and kind not in ("text", "unchecked"):
        error = re.sub(r" at 0x[0-9a-f]+", " at 0x…", error)
        for bad in ("{" + BAD + "}", BAD):
            error = error.replace(repr(bad), "{value!r}").replace(bad, "{value}")
        behaviour["error"] = error
    return behaviour


def describe_option(action: Any, strings: list[str], deprecated: set[Any]) -> dict[str, Any]:
    kind = type(action).__name__
    entry: dict[str, Any] = {"dest": action.dest}
    also = [s for s in strings if s != strings[0]]
    if also:
        entry["also"] = also
    if list(action.option_strings) != strings:  # what argparse's messages name ("argument --a/--b: ...")
        entry["shown"] = list(action.option_strings)
    entry["action"] = _ACTIONS.get(kind, f"custom:{kind}")
    if action.nargs is not None:
        entry["nargs"] = action.nargs
    negative = getattr(action, "negative_option_strings", None)
    if kind == "BooleanOptionalAction":
        negative = [s for s in strings if s.startswith("--no-")]
    if negative:
        entry["negative"] = sorted(negative)
    if action.type is not None:
        entry["type"] = _type_name(action.type)
    if action.choices is not None:
        entry["choices"] = [_plain(choice) for choice in action.choices]
        if frozenset(action.choices) - {"None"} in COMPETING_CHOICES:
            entry["choices_vary"] = True  # a process accepts one of two lists: the union is recorded
    note = _deprecation(action, deprecated)
    if note:
        entry["deprecated"] = note
    if action.required:
        entry["required"] = True
    return entry


def describe_parser(parser: Any) -> dict[str, Any]:
    deprecated = set(getattr(parser, "_deprecated", set()))
    strings_of: dict[int, list[str]] = {}
    for string, action in parser._option_string_actions.items():
        strings_of.setdefault(id(action), []).append(string)
    types_: dict[str, dict[str, Any]] = {}
    options: dict[str, Any] = {}
    positionals = [{"dest": a.dest, "nargs": a.nargs} for a in parser._actions if not a.option_strings]
    # argparse's own order (its ambiguity messages list matches in it): the order spellings were registered
    ordered = list({id(action): action for action in parser._option_string_actions.values()}.values())
    for action in ordered:
        strings = strings_of[id(action)]  # hidden spellings included
        entry = describe_option(action, strings, deprecated)
        if action.type is not None:
            behaviour = type_behaviour(action.type)
            name = entry["type"]
            if types_.setdefault(name, behaviour) != behaviour:  # two lambdas, say: name them by option
                name = entry["type"] = f"{name}@{strings[0]}"
                types_[name] = behaviour
        options[strings[0]] = entry
    return {
        "prog": parser.prog,
        "allow_abbrev": parser.allow_abbrev,
        "positionals": positionals,
        "types": dict(sorted(types_.items())),
        "options": options,
    }


# ---------------------------------------------------------------- the child: rewriting probes ---------------


def rewritten(parser: Any, argv: list[str]) -> list[str] | str:
    """What the release's FlexibleArgumentParser.parse_args hands argparse for `argv` (or the error it raises)."""
    seen: list[list[str]] = []
    original = argparse.ArgumentParser.parse_args

    def capture(self: Any, args: Any = None, namespace: Any = None) -> Any:
        seen.append(list(args))
        return argparse.Namespace()

    argparse.ArgumentParser.parse_args = capture  # type: ignore[method-assign]
    try:
        parser.parse_args(argv)
    except Exception as exc:  # the release refuses the arguments itself
        return f"{type(exc).__name__}: {exc}"
    finally:
        argparse.ArgumentParser.parse_args = original  # type: ignore[method-assign]
    return seen[0][2:] if seen else "no parse"


def _classify(name: str, outcome: Any, variants: dict[str, Any]) -> str:
    for variant, expected in variants.items():
        if outcome == expected:
            return variant
    raise SystemExit(f"unknown {name} rewriting: {outcome!r}; read FlexibleArgumentParser.parse_args")


def rewriting(parser: Any) -> dict[str, str]:
    """How the release rewrites arguments, named after the variants its sources show (each probe classified)."""
    head = ["serve", MODEL]
    probe = lambda *args: rewritten(parser, [*head, *args])  # noqa: E731
    json_dump = json.dumps
    features = {
        "underscores": _classify(
            "underscore",
            probe("--a_b.c_d=x"),
            {
                "whole_name": ["--a-b.c-d=x"],
                "whole_name_dotted": ["--a-b", json_dump({"c-d": "x"})],
                "before_dot": ["--a-b", json_dump({"c_d": "x"})],
            },
        ),
        "dotted_keys": _classify(
            "dotted key",
            (probe("--x.y", "1"), probe("-x.y", "1")),
            {
                "none": (["--x.y", "1"], ["-x.y", "1"]),
                "long": (["--x", json_dump({"y": "1"})], ["-x.y", "1"]),
                "all": (["--x", json_dump({"y": 1})], ["-x", json_dump({"y": 1})]),
            },
        ),
        "dotted_values": _classify(
            "dotted value",
            (probe("--x.y", "1k"), probe("--x.y+", "a,b")),
            {
                "none": (["--x.y", "1k"], ["--x.y+", "a,b"]),
                "string": (["--x", json_dump({"y": "1k"})], ["--x", json_dump({"y+": "a,b"})]),
                "json_append": (["--x", json_dump({"y": "1k"})], ["--x", json_dump({"y": ["a", "b"]})]),
                "json_or_int_append": (
                    ["--x", json_dump({"y": 1000})],
                    ["--x", json_dump({"y": ["a", "b"]})],
                ),
            },
        ),
        "o_attached": _classify(
            "-O<x>",
            (probe("-O3"), probe("-O=3"), probe("-Ox")),
            {
                "kept": (["-O3"], ["-O=3"], ["-Ox"]),
                "level": (["-O", json_dump({"level": 3})],) * 2 + (["-O", json_dump({"level": "x"})],),
                "mode": (["-O", json_dump({"mode": 3})],) * 2 + (["-O", json_dump({"mode": "x"})],),
                "optimization_level": (["--optimization-level", "3"],) * 2 + (["--optimization-level", "x"],),
            },
        ),
        "o_spaced": _classify(
            "-O <digit>",
            (probe("-O", "3"), probe("-O", "x")),
            {
                "kept": (["-O", "3"], ["-O", "x"]),
                "level": (["-O", json_dump({"level": 3})], ["-O", "x"]),
                "mode": (["-O", json_dump({"mode": 3})], ["-O", "x"]),
                "optimization_level": (["--optimization-level", "3"], ["-O", "x"]),
            },
        ),
        "o_dotted": _classify(
            "-O.<key>",
            probe("-O.k=1"),
            {
                "kept": ["-O.k=1"],
                "compilation_config": ["-O", json_dump({"k": 1})],
                "cc": ["-cc", json_dump({"k": 1})],
                "optimization_level": ["--optimization-level", ".k=1"],
            },
        ),
        "help_search": _classify("--help=<x>", probe("--help=x"), {"none": ["--help=x"], "help": ["--help"]}),
    }
    return features


def omni_exit() -> str | None:
    """What the release's `vllm` entry point (vllm/entrypoints/cli/main.py::main, 0.20+) logs before exiting 1
    when `--omni` stands anywhere on the command line and vllm-omni is not installed (the official images)."""
    spec = importlib.util.find_spec("vllm.entrypoints.cli.main")
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text())
    checks_argv = any(
        isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and node.left.value == "--omni"
        for node in ast.walk(tree)
    )
    for node in ast.walk(tree):
        if (
            checks_argv
            and isinstance(node, ast.Call)
            and getattr(node.func, "attr", "") == "error"
            and node.args
        ):
            said = node.args[0]
            if isinstance(said, ast.Constant) and isinstance(said.value, str) and "--omni" in said.value:
                return said.value
    return None


def task_hint(parser: Any) -> str | None:
    """The hint the release's FlexibleArgumentParser.error adds to "unrecognized arguments: --task ..."."""
    outcome = parse_outcome(parser, ["serve", MODEL, "--task", "embed"])
    if outcome.get("message", "").count("\n") and "Hint:" in outcome["message"]:
        return outcome["message"].split("\n\n", 1)[1]
    return None


# ---------------------------------------------------------------- the child: the oracle ----------------------


def parse_outcome(parser: Any, argv: list[str]) -> dict[str, Any]:
    """What the release's own `vllm serve` parser does with `argv`: parses, exits with an error, or raises."""
    err, out = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            parser.parse_args(argv)
    except SystemExit as exit_:
        if exit_.code == 0:
            return {"exit": 0}
        text = err.getvalue()
        start = text.find(": error: ")
        start = text.rfind("\n", 0, start) + 1 if start >= 0 else 0
        return {
            "exit": exit_.code,
            "message": re.sub(r" at 0x[0-9a-f]+", " at 0x…", text[start:].rstrip("\n")),
        }
    except Exception as exc:
        return {"raises": f"{type(exc).__name__}: {exc}"}
    return {"parses": True}


def child(sources: Path | None, release: str) -> None:
    """Build the release's parser and print what it holds (stand-ins for the release's sources, or with
    `sources` None, the vLLM installed in this interpreter, imported for real)."""
    finder = None
    wheel: dict[str, Any] = {}
    os.environ["VLLM_LOGGING_LEVEL"] = "ERROR"
    sys.argv[0] = "vllm"  # argparse names the program after it, as the `vllm` entry point does
    if sources is not None:
        wheel = json.loads((sources / "wheel.json").read_text())
        sys.path.insert(0, str(sources))
        finder = StandInFinder(set(wheel["compiled"]), _pinned_versions(sources))
        sys.meta_path.insert(0, finder)
        _answer_versions_of_stand_ins(finder)
    no_driver = _NoDriver()
    if sources is None:
        sys.meta_path.insert(0, no_driver)
    sys.meta_path.insert(0, _Platform(os.environ.get("COLO_VLLM_PLATFORM", "cuda")))
    if sources is not None:
        _bare_vllm_package(sources, release)
    parser, serve = build_parser(release)
    import yaml

    corpus = yaml.safe_load(CORPUS.read_text())
    oracle = {" ".join(line): parse_outcome(parser, ["serve", MODEL, *COLO_ARGS, *line]) for line in corpus}
    table = describe_parser(serve)
    table["top"] = sorted(parser._option_string_actions)
    table["rewriting"] = rewriting(parser)
    table["task_hint"] = task_hint(parser)
    table["omni_exit"] = omni_exit()
    replaced = (
        dict(sorted(finder.replaced.items())) if finder else dict.fromkeys(no_driver.stood_in, "compiled")
    )
    json.dump({"table": table, "oracle": oracle, "wheel": wheel, "replaced": replaced}, sys.stdout)


def verify(release: str, python: str, cache: Path) -> int:
    """Compare the stand-in reading of `release` with a real import of it in `python` (a venv where that
    release and its dependencies, torch included, are installed); print every difference, return how many."""
    sources = fetch_sources(release, cache)
    # A real CUDA platform queries the GPU at import and this machine has no driver; with no platform at all
    # 0.19+ cannot build the parser (DeviceConfig refuses), so both readings run on vLLM's CPU platform.
    env = {**os.environ, "PYTHONHASHSEED": "0", "COLO_VLLM_PLATFORM": "cpu"}
    readings = []
    for command in ([sys.executable, __file__, "--child", str(sources), release],
                    [python, __file__, "--child-real", release]):  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-4000:]}")
        readings.append(json.loads(done.stdout))
    stood, real = readings
    differences = 0
    for part in ("table", "oracle"):
        entries = {**real[part], **real[part].get("options", {})} if part == "table" else real[part]
        stood_entries = {**stood[part], **stood[part].get("options", {})} if part == "table" else stood[part]
        for name in sorted(set(entries) | set(stood_entries)):
            if name != "options" and entries.get(name) != stood_entries.get(name):
                differences += 1
                print(
                    f"{part} {name!r}:\n  stand-ins: {stood_entries.get(name)}\n  real:      {entries.get(name)}"
                )
    print(
        f"vllm {release}: {len(real['table']['options'])} options and {len(real['oracle'])} corpus verdicts "
        f"compared with a real import (stood in there: {', '.join(real['replaced']) or 'nothing'}); "
        f"{differences} differences"
    )
    return differences


# ---------------------------------------------------------------- the parent: ranges and files ---------------


def _source_files(sources: Path) -> str:
    found = [
        path
        for path in ("vllm/utils/argparse_utils.py", "vllm/utils/__init__.py", "vllm/utils.py")
        if (sources / path).exists() and "class FlexibleArgumentParser" in (sources / path).read_text()
    ]
    return (
        f"vllm/entrypoints/cli/main.py::main, vllm/entrypoints/cli/serve.py::ServeSubcommand.subparser_init, "
        f"vllm/entrypoints/openai/cli_args.py::make_arg_parser, vllm/engine/arg_utils.py::"
        f"AsyncEngineArgs.add_cli_args, {found[0]}::FlexibleArgumentParser.parse_args"
    )


def read_release(release: str, cache: Path) -> dict[str, Any]:
    sources = fetch_sources(release, cache)
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(sources), release],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    if done.returncode != 0:
        raise SystemExit(f"vllm {release}: the parser could not be built:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    result["source"] = (
        f"vllm {release} wheel {result['wheel']['wheel']} (sha256 {result['wheel']['sha256']}): "
    )
    result["source"] += _source_files(sources)
    return result


class _Flow(dict[str, Any]):
    """One option, written on one line."""


def _flow(dumper: Any, data: _Flow) -> Any:
    return dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=True)


def _delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What changed from one range to the next. Order matters (argparse lists ambiguous matches in the order
    options were registered), so an option that is new or moved is `added` with the option it follows."""
    kept_order = set()
    matcher = difflib.SequenceMatcher(a=list(before), b=list(after), autojunk=False)
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            kept_order.update(list(after)[j1:j2])
    names = list(after)
    added: dict[str, Any] = {}
    for position, name in enumerate(names):
        if name not in kept_order:
            added[name] = _Flow({"after": names[position - 1] if position else None, **after[name]})
    changed = {k: _Flow(v) for k, v in after.items() if k in kept_order and before[k] != v}
    removed = sorted(k for k in before if k not in kept_order)
    delta: dict[str, Any] = {}
    if removed:
        delta["removed"] = removed
    if added:
        delta["added"] = added
    if changed:
        delta["changed"] = changed
    return delta


def ranges_of(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive releases (oldest first) whose tables are the same, as ranges: first, last, table, source."""
    ranges: list[dict[str, Any]] = []
    for release, result in results.items():
        if ranges and ranges[-1]["table"] == result["table"]:
            ranges[-1]["last"] = release
            continue
        ranges.append(
            {"first": release, "last": release, "table": result["table"], "source": result["source"]}
        )
    return ranges


PARSER_KEYS = ("prog", "allow_abbrev", "positionals", "top", "rewriting", "task_hint", "omni_exit")


def _applied(table: dict[str, Any], part: dict[str, Any] | None) -> dict[str, Any]:
    """A range's changes applied to the table before it, as colo/vllm/serve_cli.py::_apply reads them."""
    if not part:
        return table
    removed = set(part.get("removed", ()))
    changed = part.get("changed", {})
    entries = [(k, dict(changed.get(k, v))) for k, v in table.items() if k not in removed]
    for name, entry in part.get("added", {}).items():
        entry = dict(entry)
        after = entry.pop("after", None)
        position = 0 if after is None else [k for k, _ in entries].index(after) + 1
        entries.insert(position, (name, entry))
    return dict(entries)


def read_table(text: str) -> list[dict[str, Any]]:
    """The ranges a written serve_cli.yaml holds, each with its whole table again (the inverse of render_table)."""
    import yaml

    ranges: list[dict[str, Any]] = []
    parser: dict[str, Any] = {}
    types: dict[str, Any] = {}
    options: dict[str, Any] = {}
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the table is 150 KB
    for index, entry in enumerate(yaml.load(text, Loader=loader)["releases"]):
        parser = {**parser, **entry.get("parser", {})}
        if index == 0:
            types = {k: dict(v) for k, v in entry["types"].items()}
            options = {k: dict(v) for k, v in entry["options"].items()}
        else:
            types = _applied(types, entry.get("types"))
            options = _applied(options, entry.get("options"))
        table = {k: parser[k] for k in PARSER_KEYS} | {"types": types, "options": options}
        ranges.append({"first": str(entry["first"]), "last": str(entry["last"]), "table": table,
                       "source": entry["source"]})  # fmt: skip
    return ranges


def render_table(ranges: list[dict[str, Any]]) -> str:
    import yaml

    out: list[dict[str, Any]] = []
    previous: dict[str, Any] | None = None
    for entry in ranges:
        table = entry["table"]
        item: dict[str, Any] = {"first": entry["first"], "last": entry["last"], "source": entry["source"]}
        parser = {k: table[k] for k in PARSER_KEYS}
        if previous is None:
            item["parser"] = parser
            item["types"] = {k: _Flow(v) for k, v in table["types"].items()}
            item["options"] = {k: _Flow(v) for k, v in table["options"].items()}
        else:
            old_parser = {k: previous[k] for k in parser}
            if parser != old_parser:
                item["parser"] = {k: v for k, v in parser.items() if old_parser[k] != v}
            for part in ("types", "options"):
                delta = _delta(previous[part], table[part])
                if delta:
                    item[part] = delta
        out.append(item)
        previous = table
    dumper = yaml.SafeDumper
    dumper.add_representer(_Flow, _flow)
    header = (
        "# `vllm serve`'s arguments per vLLM release range, read from each release's own parser by\n"
        "# scripts/extract-vllm-serve-cli.py (generated: do not edit; rerun the script). The first range lists\n"
        "# every option; each later range lists what it adds, changes or removes. Keys are an option's first\n"
        "# spelling; `also` its other spellings (argparse's order); `types` what each type function accepts (its\n"
        "# kind, found by trying it on sample values) and the message argparse prints when it refuses one;\n"
        "# `parser.rewriting` how FlexibleArgumentParser.parse_args rewrites arguments before argparse reads them.\n"
    )
    body = yaml.dump({"releases": out}, Dumper=dumper, sort_keys=False, width=10**6, allow_unicode=True)
    return header + body


def oracle_of(
    results: dict[str, dict[str, Any]],
    lines: dict[str, list[dict[str, Any]]] | None = None,
    previous: str | None = None,
) -> dict[str, Any]:
    """Each corpus line's outcome, with the releases that give it (consecutive releases grouped). `lines`:
    an oracle already written, whose newest release is `previous`, that `results` (newer releases) extend."""
    oracle: dict[str, list[dict[str, Any]]] = {
        line: [dict(run) for run in runs] for line, runs in (lines or {}).items()
    }
    last = previous
    for release, result in results.items():
        for line, outcome in result["oracle"].items():
            runs = oracle.setdefault(line, [])
            if runs and runs[-1]["outcome"] == outcome and runs[-1]["last"] == last:
                runs[-1]["last"] = release
            else:
                runs.append({"first": release, "last": release, "outcome": outcome})
        last = release
    return {"model": MODEL, "colo_args": COLO_ARGS, "lines": oracle}


def append_releases(results: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The committed table and oracle with `results` (releases newer than the table's newest) appended."""
    unlisted = [release for release in results if release not in RELEASES]
    if unlisted:
        raise SystemExit(
            f"add {', '.join(unlisted)} to RELEASES in this script first, so that a full run reads it too"
        )
    ranges = read_table(TABLE.read_text())
    newest = ranges[-1]["last"]
    older = [release for release in results if release_order(release) <= release_order(newest)]
    if older:
        raise SystemExit(
            f"{', '.join(older)} not newer than {newest}, the newest release {TABLE.name} holds: re-reading a "
            f"release inside the table needs every release (run without --releases)"
        )
    committed = json.loads(ORACLE.read_text())
    if committed["model"] != MODEL or committed["colo_args"] != COLO_ARGS:
        raise SystemExit(f"{ORACLE.name} was written for other colo arguments: run without --releases")
    for release, result in results.items():
        if ranges[-1]["table"] == result["table"]:
            ranges[-1]["last"] = release
        else:
            ranges.append(
                {"first": release, "last": release, "table": result["table"], "source": result["source"]}
            )
    return ranges, oracle_of(results, committed["lines"], newest)


def release_order(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", release))


def write(ranges: list[dict[str, Any]], oracle: dict[str, Any]) -> None:
    TABLE.parent.mkdir(parents=True, exist_ok=True)
    TABLE.write_text(render_table(ranges))
    ORACLE.write_text(json.dumps(oracle, indent=1, sort_keys=True) + "\n")


def main(argv: Sequence[str]) -> None:
    if argv[:1] == ["--child"]:
        child(Path(argv[1]), argv[2])
        return
    if argv[:1] == ["--child-real"]:
        child(None, argv[1])
        return
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--releases", default=",".join(RELEASES))
    options.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    options.add_argument(
        "--verify-with",
        metavar="PYTHON",
        help="an interpreter with one release of vLLM installed: compare its real parser with the stand-in "
        "reading of that release (--releases names it) instead of writing the files",
    )
    chosen = options.parse_args(argv)
    if chosen.verify_with:
        sys.exit(
            1 if any(verify(r, chosen.verify_with, chosen.cache) for r in chosen.releases.split(",")) else 0
        )
    results = {}
    for release in chosen.releases.split(","):
        results[release] = read_release(release, chosen.cache)
        stood_in = results[release]["replaced"]
        print(
            f"vllm {release}: {len(results[release]['table']['options'])} options; {len(stood_in)} vLLM modules "
            f"could not run on stand-ins and were stood in for: {', '.join(stood_in) or 'none'}",
            file=sys.stderr,
        )
    chosen_releases = list(results)
    if chosen_releases == RELEASES or not TABLE.exists():
        write(ranges_of(results), oracle_of(results))
    else:
        write(*append_releases(results))


if __name__ == "__main__":
    main(sys.argv[1:])
