# Two commands do everything on a fresh clone: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# aws-sam-cli and cfn-lint pin boto3 and pydantic: they get a virtualenv of their own.
SAMVENV := .venv-sam
SAM := $(SAMVENV)/bin/sam

.PHONY: demo test lint typecheck unit bench chaos install sam clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(SAM):
	$(PY) -m venv $(SAMVENV)
	$(SAMVENV)/bin/pip install --quiet --upgrade pip
	$(SAMVENV)/bin/pip install --quiet 'aws-sam-cli>=1.170,<2' 'cfn-lint>=1.58,<2'

install: $(STAMP) $(SAM)

# `make sam` installs the SAM CLI (and cfn-lint) into .venv-sam: then `.venv-sam/bin/sam build`.
sam: $(SAM)
	@echo "sam is $(SAM): $(SAM) build && $(SAM) deploy --guided"

demo: $(STAMP)
	$(BIN)/python -m workflows.demo

lint: $(STAMP)
	$(BIN)/ruff check handler tests infra bench
	$(BIN)/ruff format --check handler tests infra bench
	$(BIN)/workflows lint handler/

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP) $(SAM)
	SAM_CLI=$(abspath $(SAM)) $(BIN)/pytest

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python -m bench

# Random workflows under random AWS faults: `make chaos SEEDS=10000`, or one case with
# `make chaos SEED=1234 [FAULTS='12:throttle,40:crash_after']`.
SEEDS ?= 2000
chaos: $(STAMP)
	$(BIN)/python -m tests.simulation.chaos $(if $(SEED),--seed $(SEED) $(if $(FAULTS),--faults '$(FAULTS)'),--seeds $(SEEDS))

clean:
	rm -rf $(VENV) $(SAMVENV) .mypy_cache .pytest_cache .ruff_cache
