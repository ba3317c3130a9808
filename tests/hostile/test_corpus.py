"""A corpus of hostile stack files, each run through `colo plan` and `colo render` as a user would run them:
in a subprocess, under a memory cap and a timeout.

Every refusal exits as documented (2 invalid config, 1 does not fit), names the config path (or the file),
shows no traceback and writes nothing; every render that succeeds writes objects Kubernetes accepts.
Each committed file states what it tries and what colo must answer in its first lines:

    # hostile: <what the file tries>
    # expect: <exit code> [<config path the message names, or "file"> | <words of the reason>]

Inputs too large to commit (10 MB strings) or that are not files (devices, FIFOs) are generated here.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from colo.render import APPLY_DIR
from tests.apply_dir import apply_directories_problems
from tests.model_files import TINY_CONFIG

CORPUS = Path(__file__).resolve().parent / "corpus"
REPO = CORPUS.parents[2]
BASE = (CORPUS / "ok-labels.yaml").read_text().split("\n", 2)[2]  # a valid stack, without its header
MEMORY_CAP = 1024 * 1024 * 1024  # address space: a render of the prod stack needs under 512 MiB
TIMEOUT_S = 60  # a refusal takes about a second, a render a few; a hang is stopped here
KUBERNETES_VERSION = "1.34.0"


@dataclass(frozen=True)
class Expected:
    code: int
    names: str = ""  # a config path, or "file": the stack file's own path
    reason: str = ""  # words the message must hold, so that a refusal for another reason does not pass


def _expected(path: Path) -> Expected:
    for line in path.read_text(errors="replace").splitlines()[:3]:
        if line.startswith("# expect:"):
            head, _, reason = line.removeprefix("# expect:").partition(" | ")
            code, *names = head.split()
            return Expected(int(code), names[0] if names else "", reason.strip())
    raise AssertionError(f"{path.name} states no expectation")


def _llm(extra: str) -> str:
    anchor = '        vllm: {version: "0.19.1"}\n      embedding:'
    return BASE.replace(anchor, '        vllm: {version: "0.19.1"}\n' + extra + "      embedding:", 1)


def _fifo_model(directory: Path) -> str:
    model = directory / "fifo-model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(TINY_CONFIG))
    os.mkfifo(model / "model.safetensors")
    return str(model)


# Writes a generated input into the directory it is given and returns the --config argument.
Generated = Callable[[Path], str]


def _write(name: str, data: bytes | str) -> Generated:
    def build(directory: Path) -> str:
        path = directory / f"Pulumi.{name}.yaml"
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
        return str(path)

    return build


def _profile(source: Callable[[Path], str]) -> Generated:
    def build(directory: Path) -> str:
        path = directory / "Pulumi.profile.yaml"
        path.write_text(_llm(f"        profile: {json.dumps(source(directory))}\n"))
        return str(path)

    return build


def _unparsed_pooling(directory: Path) -> str:
    """An embedder whose sentence-transformers Pooling config sets max pooling first, pinned to a release that
    raises on it (vllm 0.12.0 transformers_utils/config.py::get_pooling_config_name)."""
    model = directory / "max-pooled-embedder"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "config.json").write_text(json.dumps(TINY_CONFIG))
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    (model / "modules.json").write_text(json.dumps(modules))
    pooling = {"word_embedding_dimension": 64, "pooling_mode_max_tokens": True, "include_prompt": True}
    (model / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    embedding = (
        '      embedding:\n        model: Qwen/Qwen3-Embedding-0.6B\n        vllm: {version: "0.19.1"}\n'
    )
    assert embedding in BASE
    path = directory / "Pulumi.pooling.yaml"
    path.write_text(
        BASE.replace(
            embedding,
            f"      embedding:\n        model: acme/max-pooled-embedder\n        profile: {json.dumps(str(model))}\n"
            '        vllm: {version: "0.12.0"}\n',
        )
    )
    return str(path)


TEN_MB = 10 * 1024 * 1024
# name -> (the input's writer, what colo must answer)
GENERATED: dict[str, tuple[Generated, Expected]] = {
    "ten-megabyte-model-id": (
        _write("model", BASE.replace("model: Qwen/Qwen3-8B-FP8", "model: " + "a" * TEN_MB)),
        Expected(2, "file", "colo reads files of at most 1 MiB"),
    ),
    "ten-megabyte-extra-arg": (
        _write("arg", _llm(f'        extraArgs: ["--chat-template", "{"x" * TEN_MB}"]\n')),
        Expected(2, "file", "colo reads files of at most 1 MiB"),
    ),
    "forty-kilobyte-extra-arg": (
        _write("arg40k", _llm(f'        extraArgs: ["--chat-template", "{"x" * 40_000}"]\n')),
        Expected(2, "colo:pairs[0].llm.extraArgs[1]", "at most 16384 characters"),
    ),
    "binary-garbage": (
        _write("garbage", random.Random(11).randbytes(64 * 1024)),
        Expected(2, "file", "is not UTF-8 text"),
    ),
    "invalid-utf8": (
        _write("latin1", BASE.encode() + b"# caf\xe9 cr\xe8me\n"),
        Expected(2, "file", "byte 0xe9"),
    ),
    "nul-byte": (_write("nul", BASE + "# \x00\n"), Expected(2, "file", "control characters are not allowed")),
    "dev-zero-as-stack-file": (lambda _: "/dev/zero", Expected(2, "file", "not a regular file")),
    "dev-zero-as-profile": (
        _profile(lambda _: "/dev/zero"),
        Expected(2, "colo:pairs[0].llm.profile", "not a regular file"),
    ),
    "dev-zero-as-calibration": (
        _write("calibration", BASE + "  colo:budget:\n    calibration: /dev/zero\n"),
        Expected(2, "colo:budget.calibration", "not a regular file"),
    ),
    "fifo-in-profile-directory": (
        _profile(_fifo_model),
        Expected(2, "colo:pairs[0].llm.profile", "model.safetensors is not a regular file"),
    ),
    "pooling-vllm-cannot-parse": (
        _unparsed_pooling,
        Expected(1, "colo:pairs[0].embedding.vllm.version", "Pooling type MAX not supported"),
    ),
}

COMMITTED = sorted(p.stem for p in CORPUS.glob("*.yaml"))
COMMANDS = ("plan", "render")
CASES = sorted(COMMITTED) + sorted(GENERATED)
SHARDS = 2  # each shard is one runner process; xdist spreads them over the workers


@dataclass(frozen=True)
class Run:
    case: str
    command: str
    config: str  # the --config argument
    workdir: Path
    expected: Expected

    @property
    def id(self) -> str:
        return f"{self.case} {self.command}"

    @property
    def out(self) -> Path:
        return self.workdir / "out"

    @property
    def argv(self) -> list[str]:
        return [self.command, "--config", self.config] + (
            ["--out", str(self.out)] if self.command == "render" else []
        )


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _run_all(runs: list[Run]) -> dict[str, dict[str, Any]]:
    """Every run in one runner subprocess under the memory cap, each in its own forked child."""
    request = [{"id": run.id, "argv": run.argv, "cwd": str(run.workdir)} for run in runs]
    result = subprocess.run(
        [sys.executable, "-m", "tests.hostile.fork_runner"],
        input=json.dumps(request),
        cwd=REPO,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        preexec_fn=_cap_memory,  # inherited by every child the runner forks
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S * len(runs),
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    answers: dict[str, dict[str, Any]] = json.loads(result.stdout)
    return answers


def _problem(run: Run, answer: dict[str, Any], before: set[Path]) -> str | None:
    """What is wrong with one answer, or None."""
    said = answer["stdout"] + answer["stderr"]
    if answer["code"] is None:
        return f"no answer within {TIMEOUT_S} s"
    if answer["code"] != run.expected.code:
        return f"exit {answer['code']}, expected {run.expected.code}: {said[-1500:]}"
    if "Traceback" in said:
        return f"a traceback: {said[-1500:]}"
    if len(said) > 20_000:
        return f"{len(said)} characters of output: a huge value was echoed back"
    if run.expected.code == 0:
        return None
    named = run.config if run.expected.names == "file" else run.expected.names
    if named not in said:
        return f"the message does not name {named}: {said[-1500:]}"
    if run.expected.reason not in said:
        return f"the message does not say '{run.expected.reason}': {said[-1500:]}"
    if set(run.workdir.iterdir()) != before:
        return f"wrote {sorted(p.name for p in set(run.workdir.iterdir()) - before)} although it refused"
    return None


def _rejected_by_kubernetes(directories: list[Path]) -> str | None:
    """What the apply-directory check finds in each render: objects Kubernetes refuses, or anything else."""
    return "; ".join(apply_directories_problems([d / APPLY_DIR for d in directories])) or None


def _runs(cases: list[str], tmp_path: Path) -> list[Run]:
    runs = []
    for case in cases:
        for command in COMMANDS:
            workdir = tmp_path / case / command
            workdir.mkdir(parents=True)
            if case in GENERATED:
                build, expected = GENERATED[case]
                inputs = tmp_path / case / f"inputs-{command}"
                inputs.mkdir()
                config = build(inputs)
            else:
                config, expected = str(CORPUS / f"{case}.yaml"), _expected(CORPUS / f"{case}.yaml")
            runs.append(Run(case, command, config, workdir, expected))
    return runs


@pytest.mark.skipif(
    not Path("/dev/zero").exists() or not hasattr(os, "mkfifo"), reason="needs /dev/zero and FIFOs"
)
@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_hostile_input_is_answered_as_documented_by_plan_and_render(shard: int, tmp_path: Path) -> None:
    runs = _runs(CASES[shard::SHARDS], tmp_path)
    before = {run.id: set(run.workdir.iterdir()) for run in runs}
    answers = _run_all(runs)
    failures = [
        f"{run.id}: {problem}" for run in runs if (problem := _problem(run, answers[run.id], before[run.id]))
    ]
    rendered = [run.out for run in runs if run.command == "render" and run.expected.code == 0]
    if rendered and (rejected := _rejected_by_kubernetes(rendered)):
        failures.append(f"rendered objects Kubernetes refuses: {rejected}")
    assert failures == []


def test_the_corpus_covers_every_class_of_hostile_input() -> None:
    classes = {
        "alias-bomb",
        "recursive-alias",
        "deep-nesting-flow",
        "duplicate-nested-key",
        "infinite-concurrency",
        "memory-with-newline",
        "empty-cluster-name",
        "pair-name-newline",
        "image-fullwidth-digits",
        "image-version-mismatch",
        "weights-uri-credentials",
        "gpus-per-node-too-many",
        "namespace-kube-system",
        "extra-args-abbreviation",
        "unknown-model",
        "does-not-fit-utilization",
        "ok-weights-from-s3",
    }
    assert classes <= set(COMMITTED)
    assert {"ten-megabyte-model-id", "binary-garbage", "invalid-utf8", "dev-zero-as-profile"} <= set(
        GENERATED
    )
    assert len(CASES) >= 80
