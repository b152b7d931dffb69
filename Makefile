# Two commands do everything on a fresh clone: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# aws-sam-cli and cfn-lint pin boto3 and pydantic: they get a virtualenv of their own.
SAMVENV := .venv-sam
SAM := $(SAMVENV)/bin/sam

.PHONY: demo test lint typecheck unit bench chaos install compile sam build bytecode clean browser template

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

install: $(STAMP) $(SAM) compile

# The handler package compiled to bytecode where it is, as pip compiles the packages it
# installs (an editable install is not): a fresh `python` here then loads .pyc for the
# project's modules as it does for boto3's, and as a function built by `make build` does
# (bench/import_bench.py). Timestamp-checked: an edited module is compiled again, here or
# (in memory) by the import that finds its .pyc out of date.
compile: $(STAMP)
	$(BIN)/python -m compileall -q handler

# `make sam` installs the SAM CLI (and cfn-lint) into .venv-sam: then `make build`.
sam: $(SAM)
	@echo "sam is $(SAM): make build && $(SAM) deploy --guided"

# `make build` is `sam build`, then every function's Python compiled to bytecode in its
# artifact, so that a cold start loads .pyc instead of compiling (docs/deploy.md). The
# bytecode is for the functions' runtime (template.yaml's python3.x), compiled by that
# interpreter; hash-based and unchecked, as the artifact never changes once built.
BUILD ?= .aws-sam/build
RUNTIME_PY := python$(shell sed -n 's/^ *Runtime: python\([0-9.]*\).*/\1/p' template.yaml | head -n 1)

build: $(SAM)
	$(SAM) build
	$(MAKE) bytecode

# The package ships the template as data (lambda_workflows/infra/template.yaml): the same bytes
# as ./template.yaml, which is the one to edit (tests/infra/test_template_copy.py).
template:
	cp template.yaml handler/lambda_workflows/infra/template.yaml

bytecode:
	$(RUNTIME_PY) -m compileall -q -j 0 --invalidation-mode unchecked-hash $(BUILD)

demo: $(STAMP) compile
	$(BIN)/python -m lambda_workflows.demo

lint: $(STAMP)
	$(BIN)/ruff check handler tests bench
	$(BIN)/ruff format --check handler tests bench
	$(BIN)/lambda-workflows lint handler/

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP) $(SAM) browser compile
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

bench: $(STAMP) compile
	$(BIN)/python -m bench

# Random workflows under random AWS faults: `make chaos SEEDS=10000`, or one case with
# `make chaos SEED=1234 [FAULTS='12:throttle,40:crash_after']`.
SEEDS ?= 2000
chaos: $(STAMP)
	$(BIN)/python -m tests.simulation.chaos $(if $(SEED),--seed $(SEED) $(if $(FAULTS),--faults '$(FAULTS)'),--seeds $(SEEDS))

clean:
	rm -rf $(VENV) $(SAMVENV) .mypy_cache .pytest_cache .ruff_cache
