"""apta.workloads: the Valgrind tracer's driver (trace.py) and the trace reader (sigil.py)."""
