# Two commands do everything on a fresh clone: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench install clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m workflows.demo

lint: $(STAMP)
	$(BIN)/ruff check handler tests infra bench
	$(BIN)/ruff format --check handler tests infra bench

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
