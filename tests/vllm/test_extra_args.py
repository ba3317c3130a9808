"""extraArgs are read the way each vLLM release reads `vllm serve`'s command line: no spelling of a flag colo
derives, and no secret, gets through; every other option is left to vLLM."""

from __future__ import annotations

import pytest

from colo.vllm.extra_args import (
    DERIVED,
    SECRETS,
    extra_arg_refusal,
    options_set_by,
    parser_rules,
    watched_spellings,
)
from colo.vllm.serve_cli import serve_tables

# Every release whose sources the parser rules were read from.
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


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.replace(".post", ".").split("."))


# (spelling, first release that reads it so, last release or "", the option it sets there)
SPELLINGS: list[tuple[str, str, str, str]] = [
    # underscores folded into dashes
    ("--gpu_memory_utilization=0.99", "0.8.0", "", "--gpu-memory-utilization"),
    ("--max_model_len", "0.8.0", "", "--max-model-len"),
    # argparse abbreviations, with and without `=`
    ("--gpu-memory-util", "0.8.0", "", "--gpu-memory-utilization"),
    ("--gpu-mem=0.99", "0.8.0", "", "--gpu-memory-utilization"),
    ("--max-model", "0.8.0", "", "--max-model-len"),
    ("--kv-cache-memory=8G", "0.8.0", "", "--kv-cache-memory-bytes"),
    ("--enforce", "0.8.0", "", "--enforce-eager"),
    ("--no-enforce-eager", "0.8.0", "", "--no-enforce-eager"),
    ("--served_model_name=alias", "0.8.0", "", "--served-model-name"),
    ("--model=Qwen/Qwen3-8B", "0.8.0", "", "--model"),
    ("--host=::", "0.8.0", "", "--host"),
    ("--port=9000", "0.8.0", "", "--port"),
    ("--config=serve.yaml", "0.8.0", "", "--config"),
    ("--quantization", "0.8.0", "", "--quantization"),
    ("--kv_cache_dtype=fp8", "0.8.0", "", "--kv-cache-dtype"),
    ("--max-num-batched", "0.8.0", "", "--max-num-batched-tokens"),
    ("--max_num_seqs=512", "0.8.0", "", "--max-num-seqs"),
    ("--tensor-parallel", "0.8.0", "", "--tensor-parallel-size"),
    # short aliases, their prefixes and attached values
    ("-tp", "0.8.0", "", "--tensor-parallel-size"),
    ("-tp=2", "0.8.0", "", "--tensor-parallel-size"),
    ("-t", "0.8.0", "", "--tensor-parallel-size"),
    ("-pp", "0.8.0", "", "--pipeline-parallel-size"),
    ("-q", "0.8.0", "", "--quantization"),
    ("-qfp8", "0.8.0", "", "--quantization"),
    ("-q=awq", "0.8.0", "", "--quantization"),
    ("-dp", "0.8.3", "", "--data-parallel-size"),
    ("-dcp", "0.10.2", "", "--decode-context-parallel-size"),
    ("-sc", "0.19.0", "", "--speculative-config"),
    # -O: the compilation config until 0.11, the optimization level after
    ("-O3", "0.8.0", "0.11.2", "--compilation-config"),
    ("-O3", "0.12.0", "", "--optimization-level"),
    ("-O=3", "0.12.0", "", "--optimization-level"),
    ("-O", "0.8.0", "0.11.2", "--compilation-config"),
    ("-O.cudagraph_capture_sizes=[1,2]", "0.8.0", "0.12.0", "--compilation-config"),
    ("-O.cudagraph_capture_sizes=[1,2]", "0.13.0", "", "--optimization-level"),
    # dotted JSON keys, also with abbreviated and underscored heads and list appends
    ("--compilation-config.cudagraph_capture_sizes=[1,2,4]", "0.9.0", "", "--compilation-config"),
    ("--compilation_config.cudagraph_capture_sizes+", "0.9.0", "", "--compilation-config"),
    ("--compilation.level=0", "0.9.0", "", "--compilation-config"),
    ("--speculative-config.method=ngram", "0.9.0", "", "--speculative-config"),
    ("--hf-overrides.max_position_embeddings=131072", "0.9.0", "", "--hf-overrides"),
    ("-cc.cudagraph_capture_sizes=[1]", "0.12.0", "", "--compilation-config"),
    ("-sc.method=ngram", "0.19.0", "", "--speculative-config"),
    # secrets
    ("--api-key=sk-123", "0.8.0", "", "--api-key"),
    ("--api_key", "0.8.0", "", "--api-key"),
    ("--hf-tok=hf_abc", "0.8.0", "", "--hf-token"),
    # aliases the release's own table registers with a derived option
    ("--device-memory-utilization=0.99", "0.31.0", "", "--gpu-memory-utilization"),
    ("--device-mem=0.99", "0.31.0", "", "--gpu-memory-utilization"),
    # vLLM 0.34's extensible KV cache switch, in each spelling its BooleanOptionalAction registers
    ("--enable-extensible-kv-cache", "0.34.0", "", "--enable-extensible-kv-cache"),
    ("--no-enable-extensible-kv-cache", "0.34.0", "", "--enable-extensible-kv-cache"),
    ("--disable-extensible-kv-cache", "0.34.0", "", "--enable-extensible-kv-cache"),
    ("--disable_extensible_kv", "0.34.0", "", "--enable-extensible-kv-cache"),
]


def _releases(first: str, last: str) -> list[str]:
    return [v for v in RELEASES if _key(v) >= _key(first) and (not last or _key(v) <= _key(last))]


@pytest.mark.parametrize(("spelling", "first", "last", "option"), SPELLINGS)
def test_every_spelling_of_a_derived_flag_or_secret_is_read_as_that_flag(
    spelling: str, first: str, last: str, option: str
) -> None:
    releases = _releases(first, last)
    assert releases
    misread = [v for v in releases if option not in options_set_by(spelling, parser_rules(v), v)]
    assert misread == []
    assert all(extra_arg_refusal(spelling, v) is not None for v in releases)


# (spelling, releases that read it as no option at all: vLLM itself refuses it there)
UNKNOWN_BEFORE: list[tuple[str, str]] = [
    ("--compilation-config.cudagraph_capture_sizes=[1,2,4]", "0.9.0"),  # no dotted keys before 0.9.0
    ("-cc.cudagraph_capture_sizes=[1]", "0.12.0"),
    ("-sc", "0.19.0"),
    ("-dcp", "0.10.2"),
]


@pytest.mark.parametrize(("spelling", "first"), UNKNOWN_BEFORE)
def test_a_spelling_is_read_only_from_the_release_that_introduced_it(spelling: str, first: str) -> None:
    older = [v for v in RELEASES if _key(v) < _key(first)]
    assert older
    assert all(options_set_by(spelling, parser_rules(v), v) == set() for v in older)


OTHER_OPTIONS = [
    "--enable-auto-tool-choice",
    "--max-logprobs=5",
    "--tokenizer-mode",
    "--chat-template=/models/template.jinja",
    "--reasoning-parser",
    "qwen3",
    "--enable-auto-tool-choice",
    "--tool-call-parser=hermes",
    "--disable-log-requests",
    "--generation-config=auto",
    "--served-model-name-is-not-a-prefix",
    "--seed",
    "-1",
    "-0.5",
    "0.99",
    "-z",
    "--",
]


@pytest.mark.parametrize("version", ["0.8.0", "0.10.1.1", "0.12.0", "0.19.1", "0.33.0", "0.34.0"])
@pytest.mark.parametrize("arg", OTHER_OPTIONS)
def test_options_colo_does_not_derive_and_plain_values_pass(arg: str, version: str) -> None:
    assert extra_arg_refusal(arg, version) is None


def test_trusting_remote_code_and_the_revision_are_stack_keys_not_extra_args() -> None:
    """Both decide what vLLM loads, which colo reads before it sizes anything."""
    assert "trustRemoteCode" in (extra_arg_refusal("--trust_remote_code", "0.19.1") or "")
    assert "`revision`" in (extra_arg_refusal("--revision=main", "0.19.1") or "")


def test_a_refusal_names_the_stack_key_to_use_instead() -> None:
    message = extra_arg_refusal("--gpu_memory_util=0.99", "0.19.1")
    assert message is not None
    assert "--gpu-memory-utilization" in message and "gpuMemoryUtilization" in message
    assert "maxModelLen" in (extra_arg_refusal("--max-model=9000", "0.19.1") or "")
    assert "cudagraphCaptureSizes" in (extra_arg_refusal("-O3", "0.19.1") or "")


def test_the_extensible_kv_cache_switch_names_the_sizing_key() -> None:
    reason = extra_arg_refusal("--no-enable-extensible-kv-cache", "0.34.0")
    assert reason is not None and "`kvCacheSizing`" in reason and "measured" in reason and "pinned" in reason


def test_an_alias_is_watched_only_in_the_releases_that_register_it() -> None:
    """Before 0.31 `--device-memory-utilization` is no option: vLLM refuses it itself, as an unknown one."""
    assert extra_arg_refusal("--device-memory-utilization=0.99", "0.30.0") is None
    assert "--device-memory-utilization" in watched_spellings("0.31.0")


def test_no_option_vllm_accepts_is_a_strict_prefix_of_a_watched_spelling_of_another() -> None:
    """argparse takes an exact option over a prefix match, so such an option would be refused wrongly."""
    clashes = []
    for table in serve_tables():
        watched = watched_spellings(table.first)
        real = {s for option in table.options.values() for s in option.strings if s.startswith("--")}
        clashes += [
            (table.first, r, w) for r in real - set(watched) for w in watched if w != r and w.startswith(r)
        ]
    assert clashes == []


def test_a_secret_names_the_secret_key_to_use() -> None:
    assert "colo:hfToken" in (extra_arg_refusal("--hf_token=hf_abc", "0.19.1") or "")
    assert "colo:vllmApiKey" in (extra_arg_refusal("--api-key=sk", "0.19.1") or "")
    # `--h` may be --host, --hf-overrides or --hf-token: the secret is what the user hears about
    assert "secret" in (extra_arg_refusal("--h", "0.19.1") or "")


def test_a_long_refused_argument_is_cut_in_the_message() -> None:
    message = extra_arg_refusal("--max-model-len=" + "9" * 10_000, "0.19.1")
    assert message is not None and len(message) < 400 and "…" in message


def test_every_derived_option_and_secret_is_refused_in_its_own_spelling() -> None:
    for option in [*DERIVED, *SECRETS]:
        assert extra_arg_refusal(option, "0.33.0") is not None, option


@pytest.mark.parametrize("arg", ["--dtype=float32", "--dtype", "--dt=half"])
def test_a_dtype_in_extra_args_is_refused_with_the_dtype_key(arg: str) -> None:
    reason = extra_arg_refusal(arg, "0.20.0")
    assert reason is not None and "use `dtype`" in reason
