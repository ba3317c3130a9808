"""`colo estimate` refuses every bad argument with exit 2, naming the flag, and never with a traceback.

The flags take their limits from the stack schema: the same value is refused in a stack file and on the
command line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import get_args

import pytest

from colo.cli import main
from colo.cli.estimate_cmd import add_arguments, flag
from colo.config.estimate import EstimateArguments
from colo.config.schema import Quantization, ServerSpec, SpeculativeMethod

BASE = ["estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "L40S", "--vllm-version", "0.20.2"]


def _refused(capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    """Run estimate with the flags; assert exit 2 without a traceback; return stderr."""
    try:
        code = main([*BASE, *flags])
    except SystemExit as exit_:  # argparse's own refusals (a non-number, an unknown choice)
        code = int(exit_.code or 0)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--tensor-parallel-size", "0"], "--tensor-parallel-size"),
        (["--tensor-parallel-size", "-2"], "--tensor-parallel-size"),
        (["--max-num-seqs", "0"], "--max-num-seqs"),
        (["--max-num-seqs", "-5"], "--max-num-seqs"),
        (["--max-model-len", "-1"], "--max-model-len"),
        (["--max-model-len", "0"], "--max-model-len"),
        (["--max-num-batched-tokens", "0"], "--max-num-batched-tokens"),
        (["--gpu-memory-utilization", "0"], "--gpu-memory-utilization"),
        (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
        (["--gpu-memory-utilization", "-0.2"], "--gpu-memory-utilization"),
        (["--gpu-memory-utilization", "nan"], "--gpu-memory-utilization"),
        (["--vllm-version", "banana"], "--vllm-version"),
        (["--vllm-version", "0.7.3"], "--vllm-version"),
        (["--vllm-version", "1.0.0"], "--vllm-version"),
        (["--vllm-version", "0.11.0rc1"], "--vllm-version"),
        (["--gpu", "A100"], "--gpu"),
        (["--gpu", "Radeon RX 7900"], "--gpu"),
        (["--gpu-memory-mib", "0"], "--gpu-memory-mib"),
        (["--kv-cache-memory-bytes", "0"], "--kv-cache-memory-bytes"),
        (["--num-speculative-tokens", "2"], "--num-speculative-tokens"),
        (["--speculative-method", "ngram", "--num-speculative-tokens", "17"], "--num-speculative-tokens"),
        (["--speculative-method", "ngram", "--num-speculative-tokens", "0"], "--num-speculative-tokens"),
        (["--free-memory-gib", "-1"], "--free-memory-gib"),
        (["--max-model-len", "abc"], "--max-model-len"),
        (["--tensor-parallel-size", "1.5"], "--tensor-parallel-size"),
        (["--kv-cache-dtype", "int3"], "--kv-cache-dtype"),
        (["--quantization", "bogus"], "--quantization"),
    ],
)
def test_a_bad_value_exits_2_naming_its_flag(
    capsys: pytest.CaptureFixture[str], flags: list[str], named: str
) -> None:
    assert named in _refused(capsys, *flags)


def test_every_bad_flag_is_named_in_one_run(capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(capsys, "--tensor-parallel-size", "0", "--max-num-seqs", "-1", "--max-model-len", "0")
    assert all(f in err for f in ("--tensor-parallel-size", "--max-num-seqs", "--max-model-len"))


def test_neither_a_gpu_nor_its_memory_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):  # --model is required; the GPU check needs main to run
        main(["estimate"])
    capsys.readouterr()
    assert main(["estimate", "--model", "Qwen/Qwen3-8B"]) == 2
    assert "--gpu" in capsys.readouterr().err


@pytest.mark.parametrize(
    "model", ["example/unknown-13b", "{config}", "{directory}", "{not_json}"], ids=str.strip
)
def test_a_model_colo_cannot_read_is_refused_at_the_model_flag(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, model: str
) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["Nonsense"], "hidden_size": "big"}))
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_bytes(b"\xff\xfe not utf-8")
    (tmp_path / "bad.json").write_text("{ not json")
    path = model.format(
        config=tmp_path / "config.json", directory=tmp_path / "model", not_json=tmp_path / "bad.json"
    )
    code = main(["estimate", "--model", path, "--gpu", "L40S"])
    err = capsys.readouterr().err
    assert code == 2 and "--model" in err and "Traceback" not in err


def test_a_utilization_of_one_is_accepted_as_vllm_accepts_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BASE, "--gpu-memory-utilization", "1.0", "--free-memory-gib", "46"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["gpu_memory_utilization"] == 1.0


def test_a_gpu_given_by_memory_is_sized_and_the_output_says_what_was_assumed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        [
            "estimate",
            "--model",
            "Qwen/Qwen3-8B",
            "--gpu-memory-mib",
            "47000",
            "--gpu-compute-capability",
            "8.6",
            "--max-model-len",
            "8192",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["gpu_detail"]["in_catalog"] is False
    assert out["gpu_detail"]["cuda_total_gib"] == round(47000 / 1024, 2)
    assert "largest in the catalog" in out["gpu_detail"]["assumptions"][0]
    assert "compute capability 8.6 as given" in out["gpu_detail"]["assumptions"][0]


def test_a_gpu_given_by_memory_alone_is_refused_for_want_of_its_compute_capability(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        ["estimate", "--model", "Qwen/Qwen3-8B", "--gpu-memory-mib", "47000", "--max-model-len", "8192"]
    )
    captured = capsys.readouterr()
    assert code != 0
    assert "--gpu-compute-capability" in captured.out + captured.err


def test_fp8_weights_follow_the_capability_given_marlin_below_8_9(capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM runs FP8 weight-only through Marlin below compute capability 8.9 (model-dtype scales per output
    row, K/128 x N for 128-blocks: `vllm 0.14.0 …/utils/marlin_utils_fp8.py::prepare_fp8_layer_for_marlin`),
    so an unknown Ampere card holds more weight bytes than an Ada card of the same memory."""

    def weights(capability: str) -> float:
        args = ["estimate", "--model", "Qwen/Qwen3-8B-FP8", "--gpu-memory-mib", "46000"]
        main(
            [
                *args,
                "--gpu-compute-capability",
                capability,
                "--max-model-len",
                "8192",
                "--vllm-version",
                "0.19.1",
            ]
        )
        return float(json.loads(capsys.readouterr().out)["weights_gib"])

    assert weights("8.6") > weights("8.9") == weights("9.0")


def test_a_catalog_gpu_named_as_nvidia_smi_prints_it_has_nothing_assumed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        main(["estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "NVIDIA L40S", "--max-model-len", "8192"]) == 0
    )
    detail = json.loads(capsys.readouterr().out)["gpu_detail"]
    assert detail["name"] == "L40S" and detail["in_catalog"] and detail["assumptions"] == []


def test_the_flags_accept_exactly_what_the_stack_schema_accepts() -> None:
    fields = EstimateArguments.model_fields
    server = ServerSpec.model_fields
    for name in ("max_model_len", "max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization"):
        assert fields[name].annotation == server[name].annotation, name
    for name in ("kv_cache_dtype", "quantization", "dtype"):  # vLLM's names, checked by one validator each
        assert fields[name].annotation == server[name].annotation, name
        assert fields[name].metadata == server[name].metadata, name
    assert set(get_args(fields["quantization"].annotation)) - {type(None)} == {Quantization}
    assert set(get_args(fields["speculative_method"].annotation)) - {type(None)} == {SpeculativeMethod}
    assert flag("max_num_batched_tokens") == "--max-num-batched-tokens"


def test_every_flag_estimate_takes_is_validated_by_the_arguments_model() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    dests = {action.dest for action in parser._actions} - {"help", "json"}
    assert dests <= set(EstimateArguments.model_fields), dests - set(EstimateArguments.model_fields)


def test_without_flashinfer_the_dummy_sampler_sorts_and_the_kv_pool_shrinks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """vLLM 0.9.2's pip wheel does not require FlashInfer; without it top-k/top-p sorts [rows, vocab] logits."""
    flags = ["estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "A100-40GB", "--vllm-version", "0.9.2"]
    assert main(flags) == 0
    image = json.loads(capsys.readouterr().out)
    assert main([*flags, "--without-flashinfer"]) == 0
    pip = json.loads(capsys.readouterr().out)
    assert pip["activation_peak_gib"] > image["activation_peak_gib"]
    assert pip["kv_cache_gib"] < image["kv_cache_gib"]
