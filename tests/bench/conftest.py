"""The bench scripts' tests reuse the pod-script sandbox."""

from tests.scripts.conftest import sandbox

__all__ = ["sandbox"]
