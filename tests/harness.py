"""Whole-program runs under Pulumi's mock runtime; the mechanism lives in colo.mock_run (colo render uses it)."""

from colo.mock_run import ProgramRun, Recorded, RecordedOptions, RecordingMocks, default_invokes, run_program

__all__ = ["ProgramRun", "Recorded", "RecordedOptions", "RecordingMocks", "default_invokes", "run_program"]
