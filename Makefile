# Two entry points, both self-installing: `make local` (the main job on the local stack) and `make test`.
# Both install exactly what uv.lock pins, into the .venv `pulumi install` fills (Pulumi.yaml: toolchain uv).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# uv from PATH; on a machine without it, the release uv.lock pins (a test dependency), from PyPI into .uv/.
UV_VERSION := $(shell awk '/^name = "uv"$$/ { getline; gsub(/version = |"/, ""); print; exit }' uv.lock)
UV := $(or $(shell command -v uv 2>/dev/null),.uv/bin/uv)

.PHONY: local test sdk-range e2e e2e-marks lint bench lock venv uv-version clean release-diff add-release

.uv/bin/uv:
	$(PYTHON) -m venv .uv
	echo '*' > .uv/.gitignore
	.uv/bin/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

## The runtime set `pulumi install` installs, plus the test extra; --locked refuses a stale uv.lock.
## --compile-bytecode writes the packages' .pyc once, at install: where PYTHONDONTWRITEBYTECODE=1 is set (many
## containers and CI images), every colo process (and each the tests start) would otherwise compile the
## provider SDKs from source, seconds each time. When nothing changed it only checks them: a few seconds.
venv: $(UV)
	UV_PROJECT_ENVIRONMENT=$(CURDIR)/$(VENV) $(UV) sync --locked --extra test --quiet --compile-bytecode

## Plan the local stack and render it into rendered/local/ (manifests/ is what `kubectl apply -f` takes).
local: venv
	$(BIN)/colo plan --stack local
	$(BIN)/colo render --stack local --out rendered/local
	@echo "colo is $(BIN)/colo (or: source $(BIN)/activate)"

## The tests `make test` leaves to `make e2e` and to .ci/run: those that need a tool built outside the suite (the
## real Pulumi engine, Pulumi YAML's language host) or that install colo afresh from PyPI or uv's cache.
E2E_MARKS := engine or pulumi_yaml or install

## Lint, type-check and run the test suite, less the $(E2E_MARKS) tests. PYTHONDONTWRITEBYTECODE (many containers
## and CI images set it) is cleared for the suite: colo's and the tests' bytecode is written once, to __pycache__/
## (ignored by git), instead of compiled again in every process the tests start, and the tests' assertions
## rewritten again in each pytest worker.
test: venv
	$(BIN)/ruff check colo tests bench examples __main__.py
	$(BIN)/ruff format --check colo tests bench examples __main__.py
	$(BIN)/mypy
	$(BIN)/mypy examples/colocated-pair/__main__.py  # apart: a second module named __main__
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -q -n 2 --dist loadgroup -m "not ($(E2E_MARKS))"

## The Pulumi SDK range pyproject.toml allows, at its low end (`make test` runs the newest, which uv.lock pins):
## the tests that drive the SDK, in a throwaway venv with the range's lowest release (a few minutes).
sdk-range: venv
	UV=$(UV) bash scripts/check-sdk-range.sh

## The tests that need tools built outside the suite: build whatever of them is not cached yet (the control
## plane, the real Pulumi engine, Pulumi YAML's language host; once, at low priority), then run those tests and
## the install tests, one at a time (COLO_E2E=1 asks for the control-plane ones, which `make test` leaves out).
e2e: venv
	nice -n 19 bash scripts/build-control-plane.sh
	nice -n 19 bash scripts/build-pulumi-engine.sh
	nice -n 19 bash scripts/build-pulumi-yaml.sh
	COLO_E2E=1 $(BIN)/pytest -q -p no:xdist -m "control_plane or $(E2E_MARKS)"

## What changed in the vLLM sources colo cites between the newest mirrored release and NEW (its wheel from PyPI,
## kept outside the repository): `make release-diff NEW=0.35.0` writes docs/releases/NEW-diff.md, each definition's diff cut at
## MAX_LINES (40), whole files by their size; run scripts/diff-vllm-release.py itself for the whole output.
release-diff: venv
	@test -n "$(NEW)" || { echo "usage: make release-diff NEW=x.y.z" >&2; exit 2; }
	mkdir -p docs/releases
	$(BIN)/python scripts/diff-vllm-release.py $(NEW) --max-lines $(or $(MAX_LINES),40) --whole-file-stat --out docs/releases/$(NEW)-diff.md

## Add vLLM release NEW to every table its own sources generate, after reading `make release-diff NEW=...`:
## its `vllm serve` arguments, its config classes, its registry and its pipeline-parallel support
## (docs/keeping-up.md says what is left to review by hand). Sources are kept in ~/.cache/colo, outside the repository.
add-release: venv
	@test -n "$(NEW)" || { echo "usage: make add-release NEW=x.y.z" >&2; exit 2; }
	$(BIN)/python scripts/extract-vllm-serve-cli.py --releases $(NEW)
	$(BIN)/python scripts/extract-vllm-config-registry.py
	$(BIN)/python scripts/extract-vllm-architectures.py --through $(NEW) --sdist-dir $(HOME)/.cache/colo/vllm-sdists
	$(BIN)/python scripts/extract-vllm-pp-support.py --through $(NEW) --sdist-dir $(HOME)/.cache/colo/vllm-sdists

## Upgrade every pinned package to the newest release pyproject.toml allows, and rewrite uv.lock.
lock: $(UV)
	$(UV) lock --upgrade

## The marker expression of the tests `make test` leaves out, for .ci/run, which runs them after it.
e2e-marks:
	@echo "$(E2E_MARKS)"

## The uv release uv.lock pins, for CI steps that install uv themselves.
uv-version:
	@echo $(UV_VERSION)

## Accuracy and speed benchmarks (not part of the test suite).
bench: venv
	$(BIN)/python bench/accuracy.py
	$(BIN)/python bench/speed.py

clean:
	rm -rf $(VENV) .uv rendered .pytest_cache .mypy_cache .ruff_cache
