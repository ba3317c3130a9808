"""Where this checkout is: for tests that read its files (Dockerfile, pyproject.toml, workflows).

colo itself never looks for files relative to where it is installed; it finds the project from the
working directory (colo.stackfiles).
"""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
