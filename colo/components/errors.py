"""colo's errors as the Pulumi engine expects them: a RunError prints its message without a traceback."""

from __future__ import annotations

import pulumi

from colo.errors import ColoError


class ProgramError(pulumi.RunError):
    """A ConfigError or InfeasiblePlanError raised inside the program; `error` keeps the original."""

    def __init__(self, error: ColoError) -> None:
        self.error = error
        super().__init__(error.render())
