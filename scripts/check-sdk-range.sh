#!/usr/bin/env bash
# The Pulumi SDK range in pyproject.toml, checked at its low end. uv.lock (and so `make test`) holds the newest
# release in the range; this builds a throwaway virtual environment with everything uv.lock pins except the
# SDK, which is the range's lowest release, and runs there the tests that drive the SDK: the mock runtime
# under colo render, colo diff and the components, the examples, and (where scripts/build-pulumi-engine.sh
# built it) the real engine through the Automation API.
#
#   scripts/check-sdk-range.sh        (UV=path/to/uv to use another uv than the one on PATH)
#
# The lowest release is the range's own `>=` bound, read from pyproject.toml, so the two cannot drift apart.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
uv=${UV:-uv}
python=.venv/bin/python  # `make venv` made it: the interpreter, and packaging to read the range with

lowest=$("$python" - <<'PY'
import tomllib
from packaging.requirements import Requirement

dependencies = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
(sdk,) = [r for r in map(Requirement, dependencies) if r.name == "pulumi"]
(bound,) = [s.version for s in sdk.specifier if s.operator == ">="]
print(bound)
PY
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "check-sdk-range: pulumi==$lowest (the range's lowest) with the rest of uv.lock, in $work/venv"
"$uv" export --frozen --extra test --no-hashes --no-emit-project --quiet \
	| sed "s/^pulumi==.*/pulumi==$lowest/" >"$work/requirements.txt"
grep -qx "pulumi==$lowest" "$work/requirements.txt"
"$uv" venv --quiet --python "$python" "$work/venv"
"$uv" pip install --quiet --python "$work/venv" -r "$work/requirements.txt"
"$uv" pip install --quiet --python "$work/venv" --no-deps -e .
"$work/venv/bin/python" -c "
from importlib.metadata import version
from packaging.version import Version
assert Version(version('pulumi')) == Version('$lowest'), version('pulumi')"
"$work/venv/bin/python" -m pytest -q -n 2 --dist loadgroup \
	tests/cli/test_pulumi_sdk.py tests/architecture/test_pulumi_surface.py \
	tests/components tests/cli/test_render.py tests/cli/test_render_output_dir.py tests/cli/test_diff.py \
	tests/diff tests/examples tests/engine
