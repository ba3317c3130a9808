"""Imported by every Python process whose path holds this folder: the servers a run probes (the runner puts
it first on their PYTHONPATH). It installs the startup probe when COLO_PROBE_OUT names where to write; the
probe is loaded from its file beside this folder, so no package needs to be importable."""

import os

if os.environ.get("COLO_PROBE_OUT"):
    import importlib.util
    import sys
    from pathlib import Path

    _path = Path(__file__).resolve().parent.parent / "startup_probe.py"
    _spec = importlib.util.spec_from_file_location("colo_startup_probe", _path)
    if _spec is not None and _spec.loader is not None:
        _probe = importlib.util.module_from_spec(_spec)
        sys.modules["colo_startup_probe"] = _probe
        _spec.loader.exec_module(_probe)
        _probe.install(os.environ["COLO_PROBE_OUT"])
