# cosim — the two commands a user needs are `make run` and `make test`.
# `install` creates .venv (Python >= 3.11) and installs cosim with MPI from the mpich wheel.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.cosim-installed

.PHONY: install run showcase test bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "cosim needs Python >= 3.11; set PYTHON=python3.11 or newer")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[mpich,test]'
	@touch $(STAMP)

run: install
	$(BIN)/cosim run

showcase: install
	$(BIN)/cosim app --app mandelbrot --hosts 64 --technique all
	$(BIN)/cosim app --app psia --hosts 64 --technique all

test: install
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python scripts/bench.py

clean:
	rm -rf $(VENV) .cache runs .pytest_cache .hypothesis
