"""apta.murphi: the Rumur model runner (check.py, `apta-murphi-check`) and the test-vector generator (vectors.py)."""
