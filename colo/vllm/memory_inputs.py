"""What colo does with every `vllm serve` option and vLLM environment variable that can change GPU memory.

The classification is data (memory_inputs.yaml): each option, named by the EngineArgs field it sets, is
derived by colo, modelled, refused with a reason, or harmless. An `extraArgs` entry that the pinned release
reads as a refused option is refused here, matched as that release's parser matches it (its argument table,
colo/vllm/serve_cli.yaml: every spelling, alias, abbreviation and `--no-` twin), so no option that changes
memory reaches a server unsized.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from colo.catalog.data import parse_yaml
from colo.vllm.serve_cli import ServeCli, options_selected, serve_cli

DATA_FILE = Path(__file__).with_name("memory_inputs.yaml")
# The server's vllm.flashinferSampler, as vLLM reads it (vllm 0.33.0 envs.py VLLM_USE_FLASHINFER_SAMPLER)
FLASHINFER_SAMPLER_ENV = "VLLM_USE_FLASHINFER_SAMPLER"
Kind = Literal["derived", "modelled", "refused", "harmless"]
KINDS: tuple[Kind, ...] = ("derived", "modelled", "refused", "harmless")
# Words in an option's name that speak of memory, batches, caches, kernels or the model: an option named so
# may not be filed under a generic harmless group (memory_inputs.yaml says why).
MEMORY_WORDS = re.compile(
    r"memory|cache|_gb$|bytes|lora|offload|sleep|cumem|spec|draft|seq|batch|token|model|dtype|quant|graph|"
    r"captur|eager|compil|block|mamba|kv|^mm_|expert|eplb|parallel|ubatch|dbo|prefill|chunk|gpu|device|"
    r"alloc|backend|kernel|pool|runner|convert|task|override|load|window|logprob|sampl|embed|scale|rope|"
    r"optimi|performance|attention|attn|replay|buffer|worker|scheduler_cls|config"
)


@dataclass(frozen=True)
class OptionClass:
    """One option's classification: its kind and why (the group's reason)."""

    dest: str  # the EngineArgs / FrontendArgs field the option sets
    kind: Kind
    reason: str
    generic: bool = False  # filed under a harmless group for options that plainly touch no memory


@dataclass(frozen=True)
class EnvironmentClasses:
    derived: Mapping[str, str]  # variable -> the stack key (or secret) colo sets it from
    harmless: Mapping[str, str]  # variable colo sets that changes no GPU memory -> why
    modelled: Mapping[str, str]  # variable -> how colo's rules follow the release's default
    outside_the_plan: tuple[str, ...]  # variables an image may set that colo does not size


def _parse_options(groups: list[Mapping[str, Any]]) -> dict[str, OptionClass]:
    table: dict[str, OptionClass] = {}
    for group in groups:
        kind = group["class"]
        if kind not in KINDS:
            raise ValueError(f"memory_inputs.yaml: unknown class {kind!r}")
        reason = " ".join(str(group["reason"]).split())
        for dest in group["options"]:
            if dest in table:
                raise ValueError(f"memory_inputs.yaml: {dest} is classified twice")
            table[dest] = OptionClass(dest, kind, reason, bool(group.get("generic", False)))
    return table


@cache
def _data() -> dict[str, Any]:
    data: dict[str, Any] = parse_yaml(DATA_FILE.read_text())
    return data


@cache
def option_classes() -> dict[str, OptionClass]:
    """Every classified option, by the field it sets."""
    return _parse_options(_data()["options"])


@cache
def environment_classes() -> EnvironmentClasses:
    env = _data()["environment"]
    return EnvironmentClasses(
        derived={k: " ".join(str(v).split()) for k, v in env["derived"].items()},
        harmless={k: " ".join(str(v).split()) for k, v in env["harmless"].items()},
        modelled={k: " ".join(str(v).split()) for k, v in env["modelled"].items()},
        outside_the_plan=tuple(env["outside_the_plan"]),
    )


def memory_refusal(arg: str, version: str) -> str | None:
    """Why `arg` may not stand in `extraArgs` because release `version` reads it as an option that changes GPU
    memory in a way colo does not size; None when it names no such option (or names a derived one, which
    colo.vllm.extra_args refuses with the stack key to use)."""
    try:
        table = serve_cli(version)
    except ValueError:
        return None  # a release colo does not mirror: refused at its vllm.version
    classes = option_classes()
    for option in options_selected(arg, table):
        found = classes.get(option.dest)
        if found is not None and found.kind == "refused":
            spelled = "/".join(option.shown)
            return f"vLLM {version} reads it as {spelled}, which colo refuses: {found.reason}"
    return None


def unclassified_options(tables: tuple[ServeCli, ...]) -> list[tuple[str, str]]:
    """(release range, option) for every option of the argument tables that memory_inputs.yaml does not
    classify: a new release's options must be classified before colo mirrors it."""
    classes = option_classes()
    return [
        (table.label(), name)
        for table in tables
        for name, option in table.options.items()
        if option.dest not in classes
    ]


def misfiled_options() -> list[str]:
    """Options filed under a generic harmless group although their name speaks of memory (MEMORY_WORDS)."""
    return sorted(c.dest for c in option_classes().values() if c.generic and MEMORY_WORDS.search(c.dest))
