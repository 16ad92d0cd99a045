"""apta.gem5: what the gem5 extension needs without gem5 (model.py) and its evaluation driver (eval.py)."""
