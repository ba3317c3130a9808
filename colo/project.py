"""Where the Pulumi project is: the nearest project file from the working directory up, as the Pulumi CLI finds it.

Below the stack config, so that anything reading files relative to the project (a calibration file, a stack
file) can find it without loading how stack files are read (colo.stackfiles).
"""

from __future__ import annotations

from pathlib import Path

from colo.errors import ConfigError, Problem

# The CLI looks for these in each directory, in this order, from the working directory up; a stack file
# takes its project file's extension (github.com/pulumi/pulumi sdk/go/common/workspace/paths.go,
# DetectProjectPathFrom and ProjectStackPath, v3.272.0).
PROJECT_FILES = ("Pulumi.json", "Pulumi.yaml", "Pulumi.yml")


def find_project(start: Path | None = None) -> Path | None:
    """The project file the Pulumi CLI would use: the nearest one from `start` (default: the working
    directory) up to the filesystem root; None when there is none."""
    here = (start or Path.cwd()).absolute()
    for directory in (here, *here.parents):
        for name in PROJECT_FILES:
            if (directory / name).is_file():
                return directory / name
    return None


def require_project(start: Path | None = None) -> Path:
    found = find_project(start)
    if found is None:
        where = (start or Path.cwd()).absolute()
        raise ConfigError(
            [
                Problem(
                    str(where),
                    "no Pulumi.yaml here or in any directory above; run colo inside the project "
                    "directory, or pass --cwd PROJECT_DIR",
                )
            ]
        )
    return found
