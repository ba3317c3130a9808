"""colo's errors as the Pulumi engine expects them: a RunError prints its message without a traceback."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pulumi

from colo.errors import ColoError, Problem


class ProgramError(pulumi.RunError):
    """A ConfigError or InfeasiblePlanError raised inside the program; `error` keeps the original."""

    def __init__(self, error: ColoError) -> None:
        self.error = error
        super().__init__(error.render())


def refused(component: str, error: ColoError, path: Callable[[str], str]) -> ProgramError:
    """`error` as one component's refusal: each problem at the argument it is about (`path` maps a stack
    config path to it), the same message, under a heading that names the component."""
    relabelled = copy.copy(error)  # the same kind of error, so callers can still tell them apart
    relabelled.problems = [Problem(path(p.path), p.message) for p in error.problems]
    relabelled.heading = f"{component}: {error.heading}"
    relabelled.args = (relabelled.render(),)
    return ProgramError(relabelled)
