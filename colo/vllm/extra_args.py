"""Which vLLM options an `extraArgs` entry sets, read the way the pinned release reads `vllm serve`'s command line.

colo derives some flags from the budget; an `extraArgs` entry that sets one of them in any spelling vLLM
accepts would run the server at a utilization or length the plan never checked. So each entry is read as
vLLM's `FlexibleArgumentParser` and Python's argparse underneath it would read it, and refused when it may
select a derived option or a secret. What the parser does, by release (checked in every release's sources):

- `--` options: underscores become dashes in the option name (`--gpu_memory_utilization`);
  vllm 0.8.0 vllm/utils.py::FlexibleArgumentParser.parse_args. From 0.9.1 only the part before the first
  `.` is folded; vllm 0.9.1 vllm/utils.py::FlexibleArgumentParser.parse_args.
- Dotted JSON keys: `--json-arg.key value` (or `=value`, or `key+` to append to a list) is merged into
  `--json-arg '{"key": value}'` from 0.9.0 (vllm 0.9.0 vllm/utils.py::FlexibleArgumentParser.parse_args), for
  single-dash aliases too from 0.9.2 (`-O.level`; vllm 0.9.2 vllm/utils/__init__.py, same function).
- `-O`: the alias of `--compilation-config` until 0.11.2 (vllm 0.8.0 vllm/engine/arg_utils.py::
  EngineArgs.add_cli_args; `-O3` is rewritten to `-O.level=3` from 0.9.2 and to `-O.mode=3` in 0.11.x).
  From 0.12.0 `-O<x>` means `--optimization-level <x>` and `-O.<key>` is rewritten to `-cc.<key>`; from
  0.13.0 every `-O<x>` is `--optimization-level` (vllm 0.12.0 / 0.13.0 vllm/utils/argparse_utils.py::
  FlexibleArgumentParser.parse_args).
- Short aliases, from EngineArgs.add_cli_args of each release: `-tp`, `-pp`, `-q` (0.8.0+), `-dp` (0.8.3+),
  `-dcp` (0.10.2+), `-cc` (0.12.0+), `-sc` (0.19.0+).
- argparse (vLLM never turns `allow_abbrev` off): an unambiguous prefix of a long option selects it
  (`--gpu-memory-util 0.99`), `--opt=value` is split at `=`, a prefix of a single-dash alias selects it (`-t`
  for `-tp`), a two-character alias takes an attached value (`-qfp8`), and a boolean option has a `--no-`
  twin (`--no-enforce-eager`, BooleanOptionalAction from 0.10).

Each derived option is watched in every long spelling the pinned release registers for it, as its own argument
table (serve_cli.yaml, read from the release's parser) lists them: aliases such as `--device-memory-utilization`
(0.31+) and the `--no-`/`--disable-` twins of a switch (`--disable-extensible-kv-cache`, 0.34+). Abbreviations
are matched against those spellings alone: an entry is refused when it is a prefix of one. vLLM would refuse
such a prefix too when it is ambiguous, and no real option of any mirrored release is itself a strict prefix of
a watched spelling of another option (tests/vllm/test_extra_args.py checks every table), so nothing vLLM
accepts as another option is refused; an entry that names another option of the release in full is that option,
which argparse takes over the derived one it abbreviates (`--device` of 0.8-0.9 beside 0.31's
`--device-memory-utilization`). Every other option that changes GPU memory in a way colo does not size
is refused too, matched against the release's own argument table (colo/vllm/memory_inputs.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

from colo.echo import shown
from colo.vllm.memory_inputs import memory_refusal
from colo.vllm.rules import newest_range_from
from colo.vllm.serve_cli import exact_option, serve_cli

# option -> why colo owns it and which stack key to use instead (completes "... reads X as <option>, ")
DERIVED: dict[str, str] = {
    "--model": "which colo passes itself: set the server's `model` (and `weightsUri` for a local copy)",
    "--served-model-name": "which colo sets to the model id: set the server's `model`",
    "--revision": "which colo sets to the Hub commit it sized: set the server's `revision`",
    "--trust-remote-code": "which decides the architecture vLLM builds: set the server's `trustRemoteCode`",
    "--no-trust-remote-code": "which decides the architecture vLLM builds: set the server's `trustRemoteCode`",
    "--host": "which colo sets to 0.0.0.0 so that the probes and the Service reach the server",
    "--port": "which colo sets per role (LLM 8000, embedding 8001, reranker 8002) for the probes and Services",
    "--gpu-memory-utilization": "which colo derives from the budget: set `gpuMemoryUtilization` to override it",
    "--kv-cache-memory-bytes": "which colo sets from the stack: use `kvCacheMemoryBytes`, which the budget checks",
    # vllm 0.34.0 config/cache.py::CacheConfig.enable_extensible_kv_cache: on by default on CUDA, it sizes the KV
    # cache from memory measured after warm-up (v1/worker/extensible_kv_cache.py::measure_kv_cache_blocks)
    "--enable-extensible-kv-cache": "which colo derives from how the KV cache is sized: set `kvCacheSizing` "
    "(measured: vLLM sizes it after warm-up; pinned: a fixed --kv-cache-memory-bytes)",
    "--num-gpu-blocks-override": "which fixes the KV pool outside the budget: use `kvCacheMemoryBytes`",
    "--max-model-len": "which colo sets from the stack: use `maxModelLen`",
    "--max-num-seqs": "which colo sets from the stack: use `maxNumSeqs`",
    "--max-num-batched-tokens": "which colo sets from the stack: use `maxNumBatchedTokens`",
    "--kv-cache-dtype": "which colo sets from the stack: use `kvCacheDtype`",
    "--block-size": "which the budget assumes at the release's default (16 tokens, 64 from vLLM 0.34); colo has "
    "no key for another",
    "--quantization": "which colo sizes the weights for: use `quantization`",
    "--dtype": "which colo sizes the model for: use `dtype`",
    "--hf-overrides": "which changes the architecture the budget read: point `profile` at an edited config.json",
    "--enforce-eager": "which colo sets from the stack: use `enforceEager`",
    "--no-enforce-eager": "which colo sets from the stack: use `enforceEager`",
    "--compilation-config": "which colo writes for the CUDA graphs it budgeted: use `cudagraphCaptureSizes` "
    "or `enforceEager`",
    "--optimization-level": "which changes the CUDA graphs vLLM captures: use `enforceEager` or "
    "`cudagraphCaptureSizes`",
    "--cuda-graph-sizes": "which colo budgets from the stack: use `cudagraphCaptureSizes`",
    "--cudagraph-capture-sizes": "which colo budgets from the stack: use `cudagraphCaptureSizes`",
    "--max-cudagraph-capture-size": "which colo budgets from the stack: use `cudagraphCaptureSizes`",
    "--max-seq-len-to-capture": "which changes the CUDA graphs vLLM captures: use `cudagraphCaptureSizes` or "
    "`enforceEager`",
    "--speculative-config": "which colo writes from the stack: use `speculative`",
    "--spec-method": "which sets the speculative config colo writes from the stack: use `speculative`",
    "--spec-model": "which sets the speculative config colo writes from the stack: use `speculative`",
    "--spec-tokens": "which sets the speculative config colo writes from the stack: use `speculative`",
    "--language-model-only": "which colo sets from the stack: use `languageModelOnly`",
    "--no-language-model-only": "which colo sets from the stack: use `languageModelOnly`",
    "--limit-mm-per-prompt": "which colo sizes the vision profile for: use `limitMmPerPrompt`",
    "--skip-mm-profiling": "which colo sets from the stack: use `skipMmProfiling`",
    "--no-skip-mm-profiling": "which colo sets from the stack: use `skipMmProfiling`",
    "--tensor-parallel-size": "which colo sizes every rank for: use the LLM's `tensorParallelSize`",
    "--pipeline-parallel-size": "but colo plans every server on one GPU (pipeline parallel size 1)",
    "--data-parallel-size": "but colo plans every server on one GPU (data parallel size 1)",
    "--decode-context-parallel-size": "but colo plans every server on one GPU (context parallel size 1)",
    "--runner": "which colo chooses from the server's role (pooling for embedding and reranker)",
    "--convert": "which colo chooses from the server's role (classify for the reranker)",
    "--task": "which colo chooses from the server's role (pooling for embedding and reranker)",
    "--config": "a vLLM config file that can set any flag colo derives: put its settings in the stack",
}

# Values that must never stand in a Deployment's arguments, readable by anyone who can read the object.
SECRETS: dict[str, str] = {
    "--hf-token": "a secret in plain text: set the Pulumi secret colo:hfToken "
    "(`pulumi config set --secret hfToken hf_...`), which colo passes from a Kubernetes Secret",
    "--api-key": "a secret in plain text: set the Pulumi secret colo:vllmApiKey "
    "(`pulumi config set --secret vllmApiKey ...`), which every server reads as VLLM_API_KEY from a "
    "Kubernetes Secret",
}

WATCHED = {**DERIVED, **SECRETS}

_NEGATIVE_NUMBER = re.compile(r"-[0-9]+(\.[0-9]*)?|-\.[0-9]+", re.ASCII)


# Which arguments carry dotted JSON keys: none, `--a.b` only, or `-x.b` too.
DottedKeys = Literal["none", "long", "all"]


@dataclass(frozen=True)
class ParserRules:
    """How one range of vLLM releases reads its command line; each field is quoted in the module docstring."""

    first: str  # the first release that reads arguments this way
    dotted_keys: DottedKeys
    o_flag: str  # the option `-O<x>` sets
    o_dotted: str  # the option `-O.<key>` sets
    aliases: dict[str, str] = field(default_factory=dict)
    source: str = ""


_BASE_ALIASES = {"-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size", "-q": "--quantization"}
_CC = "--compilation-config"
_OL = "--optimization-level"
_SOURCE = (
    "vllm {v} {path}::FlexibleArgumentParser.parse_args, vllm/engine/arg_utils.py::EngineArgs.add_cli_args"
)


def _rules(
    first: str, dotted: DottedKeys, o_flag: str, o_dotted: str, aliases: dict[str, str], path: str
) -> ParserRules:
    return ParserRules(first, dotted, o_flag, o_dotted, aliases, _SOURCE.format(v=first, path=path))


_A083 = {**_BASE_ALIASES, "-O": _CC, "-dp": "--data-parallel-size"}
_A0102 = {**_A083, "-dcp": "--decode-context-parallel-size"}
_A0120 = {k: v for k, v in _A0102.items() if k != "-O"} | {"-cc": _CC}
PARSER_RULES: tuple[ParserRules, ...] = (
    _rules("0.8.0", "none", _CC, _CC, {**_BASE_ALIASES, "-O": _CC}, "vllm/utils.py"),
    _rules("0.8.3", "none", _CC, _CC, _A083, "vllm/utils.py"),
    _rules("0.9.0", "long", _CC, _CC, _A083, "vllm/utils.py"),
    _rules("0.9.2", "all", _CC, _CC, _A083, "vllm/utils/__init__.py"),
    _rules("0.10.2", "all", _CC, _CC, _A0102, "vllm/utils/__init__.py"),
    _rules("0.12.0", "all", _OL, _CC, _A0120, "vllm/utils/argparse_utils.py"),
    _rules("0.13.0", "all", _OL, _OL, _A0120, "vllm/utils/argparse_utils.py"),
    _rules(
        "0.19.0", "all", _OL, _OL, {**_A0120, "-sc": "--speculative-config"}, "vllm/utils/argparse_utils.py"
    ),
)


def parser_rules(version: str) -> ParserRules:
    """The rules of the newest range that starts at or before `version` (the oldest for older releases)."""
    try:
        return PARSER_RULES[newest_range_from(version, [rules.first for rules in PARSER_RULES])]
    except ValueError:  # not a release number: the schema refuses it; read with the oldest rules
        return PARSER_RULES[0]


def _abbreviates(head: str, option: str) -> bool:
    """argparse's prefix match: `head` selects `option` when it is the option or a prefix of it."""
    return len(head) > 2 and option.startswith(head)


@cache
def watched_spellings(version: str | None) -> dict[str, str]:
    """Every long spelling of a watched option in `version`, mapped to the option's key in WATCHED: its own
    name, and each alias or negative twin the release's argument table registers with it (None, or a release
    colo has no table of: the names alone)."""
    spellings = {option: option for option in WATCHED}
    try:
        table = serve_cli(version) if version is not None else None
    except ValueError:
        table = None
    for option in table.options.values() if table is not None else ():
        watched = next((string for string in option.strings if string in WATCHED), None)
        if watched is not None:
            for string in option.strings:
                if string.startswith("--"):
                    spellings.setdefault(string, watched)
    return spellings


def _long_option(arg: str, rules: ParserRules, version: str | None = None) -> set[str]:
    name = arg.split("=", 1)[0]
    if rules.dotted_keys != "none":
        name = name.split(".", 1)[0]
    name = "--" + name[2:].replace("_", "-")
    return {
        option
        for spelling, option in watched_spellings(version).items()
        if name == spelling or _abbreviates(name, spelling)
    }


def _short_option(arg: str, rules: ParserRules) -> set[str]:
    if arg.startswith("-O"):
        return {rules.o_dotted if arg.startswith("-O.") else rules.o_flag}
    head = arg.split("=", 1)[0]
    if rules.dotted_keys == "all":
        head = head.split(".", 1)[0]
    found = set()
    for alias, option in rules.aliases.items():
        attached = len(alias) == 2 and head.startswith(alias)  # `-qfp8` is `-q fp8`
        if head == alias or alias.startswith(head) or attached:
            found.add(option)
    return found


def options_set_by(arg: str, rules: ParserRules, version: str | None = None) -> set[str]:
    """The watched options (derived or secret) `arg` may select in `version` (None: by their names alone);
    empty for a value or any other option."""
    if not arg.startswith("-") or arg in ("-", "--") or _NEGATIVE_NUMBER.fullmatch(arg):
        return set()
    if arg.startswith("--"):
        return _long_option(arg, rules, version)
    return _short_option(arg, rules)


def _names_another_option(arg: str, version: str, watched: list[str]) -> bool:
    """`arg` names in full an option of the release that is none of the watched ones it abbreviates (`--device`
    of 0.8-0.9 beside 0.31's `--device-memory-utilization`)."""
    try:
        exact = exact_option(arg, serve_cli(version))
    except ValueError:
        return False
    return exact is not None and not set(exact.strings) & set(watched)


def extra_arg_refusal(arg: str, version: str) -> str | None:
    """Why `arg` may not stand in `extraArgs` of a server pinned to vLLM `version`; None when it may. Besides
    the options colo derives and the secrets, every option that changes GPU memory in a way colo does not
    size is refused (colo/vllm/memory_inputs.yaml)."""
    rules = parser_rules(version)
    options = sorted(options_set_by(arg, rules, version))
    if options and _names_another_option(arg, version, options):
        options = []  # argparse takes the option named in full over the derived one it abbreviates
    if not options:
        return memory_refusal(arg, version)
    secrets = [option for option in options if option in SECRETS]
    reason = SECRETS[secrets[0]] if secrets else DERIVED[options[0]]
    return f"vLLM {version} reads '{shown(arg)}' as {' or '.join(options)}, {reason}"
