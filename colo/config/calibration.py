"""The stack's calibration file (`budget.calibration`): read with bounds, and applied to each process it covers."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from colo.catalog import MIB
from colo.config.yaml_safety import UnsafeYaml, load_yaml
from colo.files import FileRefused, decode_utf8, read_bounded
from colo.project import find_project
from colo.vllm import Calibration, ProcessSpec, calibrated


class CalibrationError(Exception):
    """The calibration file cannot be read; the message says why."""


def resolve(path: str) -> Path:
    """Relative paths are read from the project directory (the nearest Pulumi.yaml from the working
    directory up, where the Pulumi CLI runs the program), else the working directory."""
    candidate = Path(path)
    if candidate.is_absolute():
        return candidate
    project = find_project()
    return (project.parent if project is not None else Path.cwd()) / candidate


_CACHE: dict[tuple[Path, int, int], Calibration] = {}
MAX_CALIBRATION_BYTES = 4 * MIB  # a recorded entry is a few hundred bytes


def load_calibration(path: str) -> Calibration:
    file = resolve(path)
    try:
        stat = file.stat()
    except OSError as exc:
        raise CalibrationError(f"cannot read {path}: {exc.strerror}") from None
    key = (file, stat.st_mtime_ns, stat.st_size)
    if key not in _CACHE:
        try:
            text = decode_utf8(read_bounded(file, MAX_CALIBRATION_BYTES))
            _CACHE[key] = Calibration.model_validate(load_yaml(text) or {})
        except (FileRefused, UnsafeYaml) as exc:
            raise CalibrationError(f"{path}: {exc}") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise CalibrationError(f"{path}: {where}: {first['msg']}") from None
    return _CACHE[key]


def calibration_problem(path: str | None) -> str | None:
    """Why the stack's calibration cannot be used, or None when it can (or none is named)."""
    if path is None:
        return None
    try:
        load_calibration(path)
    except CalibrationError as exc:
        return str(exc)
    return None


def calibrate(spec: ProcessSpec, path: str | None) -> ProcessSpec:
    """`spec` with the observed constants of its GPU and release, when the stack's calibration has them."""
    if path is None:
        return spec
    try:
        entry = load_calibration(path).entry_for(spec.gpu.name, spec.vllm_version)
    except CalibrationError:  # make_plan reports it as a problem of colo:budget.calibration
        return spec
    return spec if entry is None else calibrated(spec, entry, path)
