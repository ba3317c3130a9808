"""Errors that reach users: each carries every problem found, each naming the stack config path."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ColoError(Exception):
    """Base for errors that are shown to the user without a traceback."""

    def __init__(self, problems: list[Problem], heading: str) -> None:
        self.problems = problems
        self.heading = heading
        super().__init__(self.render())

    def render(self) -> str:
        lines = [self.heading] + [f"  - {problem}" for problem in self.problems]
        return "\n".join(lines)


class ConfigError(ColoError):
    """The stack config is invalid: nothing was planned or deployed."""

    def __init__(self, problems: list[Problem], source: str = "") -> None:
        count = len(problems)
        where = f" in {source}" if source else ""
        super().__init__(
            problems, f"invalid stack config{where} ({count} problem{'s' if count != 1 else ''}):"
        )


class ArgumentsError(ConfigError):
    """Command-line arguments are invalid (each problem names its flag): nothing was sized."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems)
        count = len(problems)
        self.heading = f"invalid arguments ({count} problem{'s' if count != 1 else ''}):"
        self.args = (self.render(),)


class InfeasiblePlanError(ColoError):
    """The config is valid but the plan is not: a GPU does not fit, or vLLM would refuse a server. Nothing is
    deployed."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems, "the plan is refused; nothing was deployed:")


class UsageError(ColoError):
    """The command line asks for something colo refuses to do (e.g. write where it would lose files)."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems, "refused; nothing was written:")


class ModelsFileError(ConfigError):
    """A `colo pack --models` file is invalid (each problem names its key): nothing was searched."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems)
        count = len(problems)
        self.heading = f"invalid models file ({count} problem{'s' if count != 1 else ''}):"
        self.args = (self.render(),)
