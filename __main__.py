"""Entry point the Pulumi CLI runs; everything lives in the colo package."""

from colo.program import run

run()
