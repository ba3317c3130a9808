# Two entry points, both self-installing: `make local` (the main job on the local stack) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: local test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

## Plan the local stack and render its Kubernetes manifests into rendered/local/.
local: $(STAMP)
	$(BIN)/colo plan --stack local
	$(BIN)/colo render --stack local --out rendered/local

## Lint, type-check and run the whole test suite.
test: $(STAMP)
	$(BIN)/ruff check colo tests bench __main__.py
	$(BIN)/ruff format --check colo tests bench __main__.py
	$(BIN)/mypy
	$(BIN)/pytest -q -n 2 --dist loadgroup

## Accuracy and speed benchmarks (not part of the test suite).
bench: $(STAMP)
	$(BIN)/python bench/accuracy.py
	$(BIN)/python bench/speed.py

clean:
	rm -rf $(VENV) rendered .pytest_cache .mypy_cache .ruff_cache
