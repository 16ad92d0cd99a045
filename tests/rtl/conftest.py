"""tests/rtl: cocotb + Verilator tests of the Chisel RTL. Not part of `make test` yet (issue 4's
budget work is not done): collected only when APTA_RTL=1, which `make test-rtl` sets after
`make rtl` has built build/rtl/ and installed requirements-rtl.txt into the venv."""
import os

if os.environ.get("APTA_RTL") != "1":
    collect_ignore_glob = ["test_*.py"]
