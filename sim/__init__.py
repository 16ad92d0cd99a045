"""apta.sim: the trace-replay simulator's plan and dataflow and the evaluation driver (eval.py, `apta-sim-eval`)."""
