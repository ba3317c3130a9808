"""colo sizes every vLLM process on a shared GPU the way vLLM sizes itself, and deploys the pairs to Kubernetes.

Start with `colo plan --stack local`, then `colo render --stack local --out rendered/local`."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from colo.cli.common import ExitCode
from colo.errors import ColoError, ConfigError, UsageError


@dataclass(frozen=True)
class Command:
    module: str  # imported only when the command runs (or completion needs every flag)
    help: str  # one line, in `colo --help` and atop the command's own help
    examples: tuple[str, ...]  # shown under `colo <command> --help`, each a line a user can paste
    exit_codes: str | None = None  # where the command's own differ from EXIT_CODES (below)


COMMANDS = {
    "plan": Command(
        "colo.cli.plan_cmd",
        "size every pair on its GPU and show the budget, flags and probes",
        ("colo plan --stack local", "colo plan --config my-stack.yaml --format json"),
    ),
    "estimate": Command(
        "colo.cli.estimate_cmd",
        "size one vLLM process the way vLLM would",
        (
            "colo estimate --model Qwen/Qwen3-8B --gpu L40S --max-model-len 32768",
            "colo estimate --model path/to/config.json --gpu H100-SXM --format json",
            "colo estimate --model Qwen/Qwen3-8B --gpu-memory-mib 46068 --gpu-compute-capability 8.9",
            "colo estimate --model Qwen/Qwen3-8B --gpu L40S --vllm-version 0.35.0 --assume-rules-of 0.34.0",
        ),
    ),
    "render": Command(
        "colo.cli.render_cmd",
        "run the program under Pulumi's mock runtime and write its Kubernetes YAML",
        ("colo render --stack local --out rendered/local",),
    ),
    "diff": Command(
        "colo.cli.diff_cmd",
        "compare the plan and manifests of two configs, as markdown for a PR",
        ("colo diff --stack prod --base origin/main", "colo diff --config new.yaml --base-config old.yaml"),
    ),
    "verify": Command(
        "colo.cli.verify_cmd",
        "hold the plan against what each vLLM server reported at startup (logs, /metrics)",
        (
            "colo verify --stack prod",
            "colo verify --stack local --log chat-llm.log --server chat/llm",
            "colo verify --config bench/gpu/stacks/Pulumi.h200-dense.yaml --logs logs/ "
            "--plan bench/gpu/results/2026-12-02-h200-dense-records.json",
        ),
        """exit codes:
  0  every term of every server is within its tolerance
  1  the plan was wrong: the first term off is named
  2  nothing could be read for some server, or the config or the arguments are invalid""",
    ),
    "load": Command(
        "colo.cli.load_cmd",
        "measure in place what the companions cost the LLM: a bounded load, alone and beside them",
        (
            "colo load --stack prod --pair qwen27b --max-seconds 300",
            "colo load --stack local --loopback llm=8000 --loopback embedding=8001",
        ),
        """exit codes:
  0  measured: an LLM request of every pair loaded succeeded
  2  the config or the arguments are invalid, or no LLM request of a pair succeeded""",
    ),
    "preflight": Command(
        "colo.cli.preflight_cmd",
        "check the AWS side (cluster, instance type, S3 models) with boto3",
        (
            "colo preflight --stack prod --region us-east-1",
            "colo preflight --stack prod --kubeconfig ~/.kube/prod --context prod-admin",
        ),
    ),
    "pack": Command(
        "colo.cli.pack_cmd",
        "find the cheapest instance type and pairing that hold a list of models (or a stack's pairs)",
        (
            "colo pack --models packs/field-report.yaml",
            "colo pack --stack prod --format json",
            "colo pack --stack prod --node-pool-mode karpenter --write stacks/Pulumi.packed.yaml",
        ),
    ),
    "completion": Command(
        "colo.cli.completion_cmd",
        "print the shell completion script for bash, zsh or fish",
        (
            "colo completion bash > ~/.local/share/bash-completion/completions/colo",
            "colo completion fish > ~/.config/fish/completions/colo.fish",
        ),
    ),
    "schema": Command(
        "colo.cli.schema_cmd",
        "print the stack file's JSON Schema, for editors and other tools",
        ("colo schema > colo-stack.schema.json",),
        """exit codes:
  0  the schema was printed (it is colo's, read from no stack)""",
    ),
}

EXIT_CODES = """exit codes:
  0  it fits, the process starts, every check passes
  1  a pair does not fit, a process would not start, a check fails
  2  the config or the arguments are invalid: nothing was planned"""


def colo_version() -> str:
    try:
        return version("colo")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _overview() -> str:
    return f"{EXIT_CODES}\n\nrun `colo COMMAND --help` for its flags and examples"


def _epilog(command: Command) -> str:
    codes = command.exit_codes or EXIT_CODES
    return "\n".join(["examples:", *(f"  {example}" for example in command.examples), "", codes])


def build_parser(command: str | None = None, *, every_command: bool = False) -> argparse.ArgumentParser:
    """Only the chosen command's module is imported, so `colo plan` never loads boto3 or Pulumi;
    `every_command` imports them all (shell completion lists every flag)."""
    parser = argparse.ArgumentParser(
        prog="colo",
        description=__doc__,
        epilog=_overview(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"colo {colo_version()}")
    sub = parser.add_subparsers(title="commands", dest="command", required=True, metavar="COMMAND")
    for name, spec in COMMANDS.items():
        sub_parser = sub.add_parser(
            name,
            help=spec.help,
            description=spec.help,
            epilog=_epilog(spec),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if name == command or every_command:
            module = importlib.import_module(spec.module)
            module.add_arguments(sub_parser)
            sub_parser.set_defaults(run=module.run)
    return parser


def console() -> int:
    """The `colo` command: `colo plan | head` ends quietly, like other command-line tools. Only the process's
    own entry point may change the SIGPIPE disposition; a program calling main() keeps its own."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    return main()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(command if command in COMMANDS else None).parse_args(argv)
    try:
        code: int = args.run(args)
    except (ConfigError, UsageError) as exc:
        print(exc.render(), file=sys.stderr)
        return ExitCode.INVALID
    except ColoError as exc:
        print(exc.render(), file=sys.stderr)
        return ExitCode.FAILS
    return code
