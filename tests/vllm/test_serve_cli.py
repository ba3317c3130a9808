"""`vllm serve`'s command line is judged as the pinned release's own parser judges it: what vLLM would refuse,
colo refuses first, in vLLM's words; what vLLM accepts, colo leaves alone."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from colo.catalog.data import parse_yaml
from colo.vllm.rules import release_key
from colo.vllm.serve_cli import (
    ServeArgsRefusal,
    deprecation_notes,
    human_readable_int,
    rewrite,
    serve_args_refusal,
    serve_cli,
    serve_tables,
)

HERE = Path(__file__).parent
ORACLE = json.loads((HERE / "serve_cli_oracle.json").read_text())
CORPUS = {" ".join(line): line for line in parse_yaml((HERE / "serve_cli_corpus.yaml").read_text())}
MODEL = ORACLE["model"]
COLO_ARGS = [MODEL, *ORACLE["colo_args"]]  # what colo passes before the extra arguments

# Every final vLLM release from 0.8.0 to 0.34.0.
RELEASES = [
    "0.8.0", "0.8.1", "0.8.2", "0.8.3", "0.8.4", "0.8.5", "0.8.5.post1", "0.9.0", "0.9.0.1", "0.9.1", "0.9.2",
    "0.10.0", "0.10.1", "0.10.1.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0", "0.14.0",
    "0.14.1", "0.15.0", "0.15.1", "0.16.0", "0.17.0", "0.17.1", "0.18.0", "0.18.1", "0.19.0", "0.19.1",
    "0.20.0", "0.20.1", "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0", "0.25.1",
    "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0",
    "0.34.0",
]  # fmt: skip


def refusal(release: str, *extra: object) -> ServeArgsRefusal | None:
    return serve_args_refusal(release, list(extra), COLO_ARGS)


def message(release: str, *extra: object) -> str:
    refused = refusal(release, *extra)
    assert refused is not None, f"vLLM {release} was expected to refuse {extra}"
    return refused.message


# ---------------------------------------------------------------- held to each release's own parser -------------


def _releases_of(run: dict[str, Any]) -> list[str]:
    return [r for r in RELEASES if release_key(run["first"]) <= release_key(r) <= release_key(run["last"])]


def _unmirrored_value(line: str, release: str) -> bool:
    """The line gives a value to an option whose type vLLM checks with pydantic or code colo does not mirror."""
    table = serve_cli(release)
    for arg in CORPUS[line]:
        name = arg.split("=", 1)[0].split(".", 1)[0].replace("_", "-")
        for option in table.options.values():
            if name in option.strings:
                rule = table.types.get(option.type or "")
                if rule is not None and rule.kind == "unchecked":
                    return True
    return False


def _disagreement(line: str, release: str, outcome: dict[str, Any]) -> str | None:
    refused = serve_args_refusal(release, CORPUS[line], COLO_ARGS)
    if "parses" in outcome:
        agree = refused is None
    elif refused is None:  # the one kind of miss allowed: a value only pydantic would refuse
        agree = _unmirrored_value(line, release)
    elif "raises" in outcome:
        agree = refused.exit_status == 1 and outcome["raises"] in refused.message
    elif outcome["exit"] == 0:
        agree = refused.exit_status == 0
    else:
        agree = (refused.message, refused.exit_status) == (outcome["message"], outcome["exit"])
    return None if agree else f"vLLM {release}: {outcome} but colo: {refused}"


@pytest.mark.parametrize("line", sorted(ORACLE["lines"]))
def test_every_corpus_line_gets_the_verdict_of_each_release_own_parser(line: str) -> None:
    disagreements = [
        found
        for run in ORACLE["lines"][line]
        for release in _releases_of(run)
        if (found := _disagreement(line, release, run["outcome"])) is not None
    ]
    assert disagreements == []


def test_the_oracle_covers_every_release_and_every_corpus_line() -> None:
    assert set(ORACLE["lines"]) == set(CORPUS)
    for runs in ORACLE["lines"].values():
        assert [r for run in runs for r in _releases_of(run)] == RELEASES


# ---------------------------------------------------------------- the three lines ------------------------


def test_a_stray_word_is_an_unrecognized_argument_in_every_release() -> None:
    for release in RELEASES:
        refused = refusal(release, "stray")
        assert refused is not None and refused.index == 0
        assert refused.message == "vllm: error: unrecognized arguments: stray"


def test_an_unknown_flag_is_refused_with_its_value() -> None:
    refused = refusal("0.19.0", "--no-such-flag", "1")
    assert refused is not None
    assert (refused.message, refused.exit_status, refused.index) == (
        "vllm: error: unrecognized arguments: --no-such-flag 1",
        2,
        0,
    )
    assert refused.notes == ()  # no release has it


@pytest.mark.parametrize(
    ("entry", "kind"), [(123, "number"), (0.5, "number"), (True, "boolean"), (None, "NoneType")]
)
def test_an_entry_that_is_not_a_string_is_refused_before_anything_is_parsed(entry: object, kind: str) -> None:
    refused = refusal("0.19.0", "--seed", "1", entry)
    assert refused is not None and refused.index == 2
    assert f"is a YAML {kind}, not a string" in refused.message


# ---------------------------------------------------------------- flags of other releases -----------------------


def _first_with(option: str) -> str:
    return next(t.first for t in serve_tables() if any(option in o.strings for o in t.options.values()))


def _last_with(option: str) -> str:
    return [t.last for t in serve_tables() if any(option in o.strings for o in t.options.values())][-1]


def test_a_flag_of_a_newer_release_names_the_release_that_brings_it() -> None:
    arrives = _first_with("--async-scheduling")
    assert release_key(arrives) > release_key("0.8.5")
    refused = refusal("0.8.5", "--async-scheduling")
    assert refused is not None
    assert refused.message == "vllm: error: unrecognized arguments: --async-scheduling"
    assert refused.notes == (f"--async-scheduling arrives in vLLM {arrives}",)
    assert refusal(arrives, "--async-scheduling") is None


def test_a_removed_flag_names_the_last_release_that_had_it() -> None:
    last = _last_with("--num-scheduler-steps")
    after = next(r for r in RELEASES if release_key(r) > release_key(last))
    assert refusal(last, "--num-scheduler-steps", "8") is None
    refused = refusal(after, "--num-scheduler-steps", "8")
    assert refused is not None
    assert refused.notes == (f"--num-scheduler-steps was removed after vLLM {last}",)


def test_the_unknown_flag_note_reads_the_name_as_vllm_folds_it() -> None:
    refused = refusal("0.8.5", "--async_scheduling")
    assert refused is not None and refused.notes[0].startswith("--async-scheduling arrives in vLLM")


# ---------------------------------------------------------------- argparse's own rules --------------------------


def test_underscores_equals_and_abbreviations_select_options_as_argparse_does() -> None:
    for release in ("0.8.0", "0.19.0", "0.33.0"):
        assert refusal(release, "--trust_remote_code") is None
        assert refusal(release, "--max_logprobs=20") is None
        assert refusal(release, "--trust-remote") is None  # an unambiguous prefix


def test_an_ambiguous_prefix_is_refused_with_every_option_it_could_mean() -> None:
    text = message("0.19.0", "--enable-")
    assert text.startswith("vllm serve: error: ambiguous option: --enable- could match --enable-")
    assert "--enable-prefix-caching" in text


def test_invalid_choices_name_the_choices_in_the_release_order() -> None:
    assert message("0.8.0", "--dtype", "x") == (
        "vllm serve: error: argument --dtype: invalid choice: 'x' "
        "(choose from 'auto', 'half', 'float16', 'bfloat16', 'float', 'float32')"
    )
    assert refusal("0.8.0", "--dtype=half") is None


def test_a_missing_value_is_expected_one_argument_even_when_the_next_entry_is_a_flag() -> None:
    assert message("0.19.0", "--seed") == "vllm serve: error: argument --seed: expected one argument"
    assert message("0.19.0", "--tool-call-parser", "--enable-auto-tool-choice") == (
        "vllm serve: error: argument --tool-call-parser: expected one argument"
    )


def test_a_negative_number_is_a_value_not_a_flag() -> None:
    assert refusal("0.19.0", "--seed", "-1") is None


def test_a_list_option_needs_at_least_one_value() -> None:
    assert message("0.19.0", "--lora-modules") == (
        "vllm serve: error: argument --lora-modules: expected at least one argument"
    )
    assert refusal("0.19.0", "--lora-modules", "a=/x", "b=/y") is None


def test_a_switch_given_a_value_with_equals_is_refused() -> None:
    refused = refusal("0.19.0", "--enforce-eager=1")
    assert refused is not None and refused.index == 0
    assert refused.message == (
        "vllm serve: error: argument --enforce-eager/--no-enforce-eager: ignored explicit argument '1'"
    )


def test_a_switch_followed_by_a_word_leaves_the_word_unrecognized() -> None:
    assert message("0.33.0", "--enable-chunked-prefill", "false") == (
        "vllm: error: unrecognized arguments: false"
    )


def test_the_no_twin_of_a_boolean_option_is_accepted() -> None:
    assert refusal("0.8.0", "--no-enable-prefix-caching") is None
    assert refusal("0.33.0", "--no-enable-prefix-caching") is None


def test_type_errors_are_vllm_messages() -> None:
    assert (
        message("0.19.0", "--seed", "abc") == "vllm serve: error: argument --seed: invalid int value: 'abc'"
    )
    assert message("0.19.0", "--allowed-origins", "[*]") == (
        "vllm serve: error: argument --allowed-origins: invalid loads value: '[*]'"
    )


def test_help_exits_before_the_server_starts() -> None:
    for spelling in ("-h", "--help"):
        refused = refusal("0.19.0", "--seed", "1", spelling)
        assert refused is not None
        assert (refused.exit_status, refused.index) == (0, 2)


def test_the_top_level_version_flag_is_not_a_serve_option() -> None:
    assert message("0.19.0", "--version") == "vllm: error: unrecognized arguments: --version"


# ---------------------------------------------------------------- FlexibleArgumentParser's rewriting -----------


def test_dotted_keys_become_one_json_argument_from_0_9_0() -> None:
    assert message("0.8.5", "--no-such.key", "1") == "vllm: error: unrecognized arguments: --no-such.key 1"
    assert (
        message("0.9.0", "--no-such.key", "1")
        == 'vllm: error: unrecognized arguments: --no-such {"key": "1"}'
    )
    assert (
        message("0.9.2", "--no-such.key", "1") == 'vllm: error: unrecognized arguments: --no-such {"key": 1}'
    )


def test_a_negative_decimal_reads_as_a_dotted_key_from_0_9_2_and_crashes_the_rewriting() -> None:
    assert refusal("0.9.1", "--swap-space", "-1.5") is None
    refused = refusal("0.9.2", "--swap-space", "-1.5")
    assert refused is not None and (refused.exit_status, refused.index) == (1, 1)
    assert refused.message.startswith(
        "FlexibleArgumentParser.parse_args raises IndexError: list index out of"
    )


def test_o_is_rewritten_as_each_release_rewrites_it() -> None:
    rules = {release: serve_cli(release).rewriting for release in ("0.8.0", "0.11.0", "0.11.1", "0.13.0")}
    assert rewrite(["serve", MODEL, "-O3"], rules["0.8.0"]) == ["serve", MODEL, "-O3"]
    assert rewrite(["serve", MODEL, "-O3"], rules["0.11.0"]) == ["serve", MODEL, "-O", '{"level": 3}']
    assert rewrite(["serve", MODEL, "-O3"], rules["0.11.1"]) == ["serve", MODEL, "-O", '{"mode": 3}']
    assert rewrite(["serve", MODEL, "-O3"], rules["0.13.0"]) == ["serve", MODEL, "--optimization-level", "3"]


def test_the_task_hint_of_newer_releases_follows_the_unrecognized_task() -> None:
    assert refusal("0.8.0", "--task", "embed") is None
    text = message("0.33.0", "--task", "embed")
    assert text.startswith(
        "vllm: error: unrecognized arguments: --task embed\n\nHint: --task is not a vllm serve"
    )


def test_human_readable_integers_read_as_vllm_reads_them() -> None:
    assert (human_readable_int("1k"), human_readable_int("1K"), human_readable_int("25.6k")) == (
        1000,
        1024,
        25600,
    )
    with pytest.raises(Exception, match="Decimals are not allowed with binary suffixes like K"):
        human_readable_int("1.5K")


# ---------------------------------------------------------------- colo's own arguments and the table -------------


def test_a_flag_colo_itself_passes_that_the_release_lacks_is_refused_without_an_index() -> None:
    refused = serve_args_refusal("0.8.0", [], [*COLO_ARGS, "--kv-cache-memory-bytes", "1000"])
    assert refused is not None and refused.index is None
    assert refused.message.startswith("vllm: error: unrecognized arguments: --kv-cache-memory-bytes 1000")


def test_the_model_is_one_positional_and_a_second_is_stray() -> None:
    assert serve_args_refusal("0.19.0", [], COLO_ARGS) is None
    assert message("0.19.0", "/models/other") == "vllm: error: unrecognized arguments: /models/other"


def test_the_tables_cover_every_release_once_in_order() -> None:
    tables = serve_tables()
    covered = [
        r
        for r in RELEASES
        if any(release_key(t.first) <= release_key(r) <= release_key(t.last) for t in tables)
    ]
    assert covered == RELEASES
    for earlier, later in itertools.pairwise(tables):
        assert release_key(earlier.last) < release_key(later.first)
        assert RELEASES.index(later.first) == RELEASES.index(earlier.last) + 1  # no gap between ranges
    assert all(t.source.startswith(f"vllm {t.first} wheel vllm-{t.first}-") for t in tables)


def test_every_typed_option_has_its_type_rule() -> None:
    for table in serve_tables():
        for option in table.options.values():
            assert option.type is None or option.type in table.types, (table.first, option.strings)


def test_a_release_outside_the_mirrored_ones_is_refused() -> None:
    with pytest.raises(ValueError, match="outside the releases whose `vllm serve` arguments colo mirrors"):
        serve_cli("0.7.3")
    with pytest.raises(ValueError, match=r"0\.8\.0 to 0\.34\.0"):
        serve_cli("0.35.0")
    assert serve_cli("0.34.1").first == serve_cli("0.34.0").first  # a patch release follows its minor


def test_deprecated_options_are_named_with_what_the_release_says() -> None:
    notes = deprecation_notes("0.8.5", ["--tokenizer-pool-size", "4", "--seed", "1"])
    assert notes == (
        "--tokenizer-pool-size: vLLM 0.8.5 says in its help: "
        "This parameter is deprecated and will be removed in a future release.",
    )
    assert deprecation_notes("0.8.5", ["--seed", "1", 7]) == ()


def test_choices_built_from_an_unordered_set_accept_either_list_and_say_so() -> None:
    option = serve_cli("0.8.5").options["--guided-decoding-backend"]
    assert option.choices_vary and {"outlines", "xgrammar"} <= set(option.choices or ())
    assert refusal("0.8.5", "--guided-decoding-backend", "outlines") is None
    refused = refusal("0.8.5", "--guided-decoding-backend", "bogus")
    assert refused is not None and "invalid choice: 'bogus'" in refused.message
    assert "each process accepts one of two lists" in refused.notes[0]


def test_omni_anywhere_on_the_line_exits_before_parsing_from_0_20() -> None:
    assert message("0.19.1", "--omni") == "vllm: error: unrecognized arguments: --omni"
    refused = refusal("0.20.0", "--seed", "1", "--omni")
    assert refused is not None
    assert (refused.message, refused.exit_status, refused.index) == (
        "--omni flag requires a valid instance of vllm-omni to be installed.",
        1,
        2,
    )
