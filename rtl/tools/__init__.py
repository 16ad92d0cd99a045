"""apta.rtl: RTL tooling: mutation testing of the regression (mutation.py), the trace writers (core_trace.py, ms_trace.py)."""
