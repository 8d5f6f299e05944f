# cosim — the two commands a user needs are `make run` and `make test`.
# `install` creates .venv (Python >= 3.11) and installs cosim with MPI from the mpich wheel.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.cosim-installed

.PHONY: install bytecode run showcase test bench clean

install: $(STAMP)

# cosim's modules compiled to bytecode up front (only those changed since): a process then
# loads them instead of compiling each one, which every process would do where bytecode is
# not written on import (PYTHONDONTWRITEBYTECODE; an editable install compiles nothing)
bytecode: install
	@$(BIN)/python -m compileall -q cosim

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "cosim needs Python >= 3.11; set PYTHON=python3.11 or newer")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[mpich,test]'
	@touch $(STAMP)

run: bytecode
	$(BIN)/cosim run

showcase: bytecode
	$(BIN)/cosim app --app mandelbrot --hosts 64 --technique all
	$(BIN)/cosim app --app psia --hosts 64 --technique all

# the suite over up to 4 processes, then the tests that time signals and process ends alone
test: bytecode
	$(BIN)/python -m pytest -n auto --maxprocesses 4 -m "not serial"
	$(BIN)/python -m pytest -m serial

bench: bytecode
	$(BIN)/python scripts/bench.py

clean:
	rm -rf $(VENV) .cache runs .pytest_cache .hypothesis
