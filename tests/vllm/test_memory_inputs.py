"""Every input that changes GPU memory is derived, modelled or refused by colo, never passed silently.

The classification (colo/vllm/memory_inputs.yaml) is held to the argument table of every release colo mirrors
(colo/vllm/serve_cli.yaml, read from each release's own parser): a release whose table brings an option the
file does not classify fails here, before colo can plan for it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from colo.vllm.extra_args import SECRETS, extra_arg_refusal
from colo.vllm.memory_inputs import (
    MEMORY_WORDS,
    memory_refusal,
    misfiled_options,
    option_classes,
    unclassified_options,
)
from colo.vllm.serve_cli import OptionRule, ServeCli, serve_tables

TABLES = serve_tables()


def _long_spellings(table: ServeCli, dest: str) -> list[str]:
    return [s for o in table.options.values() if o.dest == dest for s in o.strings if s.startswith("--")]


def test_every_option_of_every_mirrored_release_is_classified() -> None:
    assert unclassified_options(TABLES) == []


def test_a_release_that_brings_an_unclassified_option_is_caught() -> None:
    newest = TABLES[-1]
    novel = OptionRule(
        strings=("--kv-cache-spill-gb",),
        shown=("--kv-cache-spill-gb",),
        dest="kv_cache_spill_gb",
        action="store",
        type="float",
    )
    future = replace(
        newest, first="9.9.0", last="9.9.0", options={**newest.options, "--kv-cache-spill-gb": novel}
    )
    assert unclassified_options((future,)) == [("9.9.0", "--kv-cache-spill-gb")]


def test_no_option_named_for_memory_hides_in_a_generic_harmless_group() -> None:
    assert misfiled_options() == []
    assert MEMORY_WORDS.search("max_num_seqs") and MEMORY_WORDS.search("cpu_offload_gb")
    assert not MEMORY_WORDS.search("ssl_keyfile") and not MEMORY_WORDS.search("uvicorn_log_level")


@pytest.mark.parametrize("table", TABLES, ids=[t.label() for t in TABLES])
def test_derived_and_refused_options_are_refused_in_every_spelling(table: ServeCli) -> None:
    """Each long spelling of a derived or refused option, in the release that has it, is refused."""
    passed = []
    for dest, found in option_classes().items():
        if found.kind not in ("derived", "refused"):
            continue
        for spelling in _long_spellings(table, dest):
            if extra_arg_refusal(f"{spelling}=1", table.first) is None:
                passed.append(spelling)
    assert passed == []


@pytest.mark.parametrize("table", TABLES, ids=[t.label() for t in TABLES])
def test_harmless_options_pass_in_every_spelling(table: ServeCli) -> None:
    refused = []
    for dest, found in option_classes().items():
        if found.kind != "harmless":
            continue
        for spelling in _long_spellings(table, dest):
            if extra_arg_refusal(spelling, table.first) is not None:
                refused.append(spelling)
    assert refused == []


def test_derived_options_name_the_stack_key_and_refused_ones_say_why() -> None:
    lora = extra_arg_refusal("--enable-lora", "0.33.0")
    assert lora is not None and "LoRA" in lora and "colo refuses" in lora
    offload = extra_arg_refusal("--cpu-offload-gb=4", "0.19.1")
    assert offload is not None and "offload" in offload
    assert "`cudagraphCaptureSizes`" in (extra_arg_refusal("--cudagraph-capture-sizes", "0.33.0") or "")
    assert "sleep mode" in (extra_arg_refusal("--enable-sleep-mode", "0.20.0") or "")
    # every spelling a release registers for a derived option (aliases, --no- twins) is refused in that release
    for dest, found in option_classes().items():
        if found.kind == "derived":
            for table in TABLES:
                for spelling in _long_spellings(table, dest):
                    assert extra_arg_refusal(spelling, table.first) is not None, (table.first, spelling)


def test_refused_options_are_matched_as_the_release_parses_them() -> None:
    assert memory_refusal("--max_loras=4", "0.33.0") is not None  # underscores folded
    assert memory_refusal("--enable-sleep", "0.33.0") is not None  # an unambiguous prefix
    assert memory_refusal("--no-enable-prefix-caching", "0.33.0") is not None  # the --no- twin
    assert memory_refusal("-ep", "0.33.0") is not None  # a short alias (--enable-expert-parallel)
    assert memory_refusal("-ep", "0.13.0") is None  # not yet an option there
    assert (
        memory_refusal("--enable-lora", "0.40.0") is None
    )  # a release colo does not mirror is refused elsewhere
    assert memory_refusal("--tokenizer", "0.33.0") is None  # exact: not the prefix of anything refused
    assert memory_refusal("0.9", "0.33.0") is None and memory_refusal("-1", "0.33.0") is None


def test_secrets_stay_secrets() -> None:
    for dest in ("api_key", "hf_token"):
        assert option_classes()[dest].kind == "refused"
    assert "--api-key" in SECRETS and "--hf-token" in SECRETS
