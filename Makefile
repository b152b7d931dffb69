# Two commands do everything on a fresh clone: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# aws-sam-cli and cfn-lint pin boto3 and pydantic: they get a virtualenv of their own.
SAMVENV := .venv-sam
SAM := $(SAMVENV)/bin/sam

.PHONY: demo test lint typecheck unit bench chaos install sam clean browser

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

unit: $(STAMP) $(SAM) browser
	SAM_CLI=$(abspath $(SAM)) $(BIN)/pytest

test: lint typecheck unit

# The dashboard's browser tests (tests/browser) drive Debian's chromium through its
# chromium-driver: one source package, so their versions always match. Installed here when
# missing, through apt, when running as root (as CI does); anyone else gets the command to run,
# and the tests skip themselves (in CI, CI=true, they fail instead).
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing chromium and chromium-driver (apt) for the browser tests"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq chromium chromium-driver >/dev/null; } \
		|| echo "apt could not install chromium: the browser tests will say so"; \
	else \
		echo "no chromium/chromedriver and not root: the browser tests will be skipped;" \
			"install them with: sudo apt-get install chromium chromium-driver"; \
	fi

bench: $(STAMP)
	$(BIN)/python -m bench

# Random workflows under random AWS faults: `make chaos SEEDS=10000`, or one case with
# `make chaos SEED=1234 [FAULTS='12:throttle,40:crash_after']`.
SEEDS ?= 2000
chaos: $(STAMP)
	$(BIN)/python -m tests.simulation.chaos $(if $(SEED),--seed $(SEED) $(if $(FAULTS),--faults '$(FAULTS)'),--seeds $(SEEDS))

clean:
	rm -rf $(VENV) $(SAMVENV) .mypy_cache .pytest_cache .ruff_cache
