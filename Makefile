# The README's two commands: `make demo` and `make test`. Both build .venv/ first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-long bench venv clean

venv: $(STAMP)

# torch is pinned and installed before anything that depends on it (a plain `torch` pulls a CUDA build).
$(STAMP): pyproject.toml setup.py pda/_rows.c pda/kernels/*.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q "torch==2.13.0"
	$(PY) -m pip install -q -e ".[demo,test,sglang]"
	$(PY) -m pip install -q --no-deps "sglang==0.5.23"  # its backend base classes, for tests/test_sglang_backend.py
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/pda demo

test: $(STAMP)
	$(PY) -m pytest tests

test-long: $(STAMP)
	$(PY) -m pytest tests --long

bench: $(STAMP)
	$(PY) -m pip install -q -e ".[bench]"
	$(PY) bench/mask_bench.py

clean:
	rm -rf $(VENV)
