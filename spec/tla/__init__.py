"""apta.tla: the TLC runner (check.py, `apta-tla-check`), trace validation (trace.py) and the QEMU log adapter (qemu_trace.py)."""
