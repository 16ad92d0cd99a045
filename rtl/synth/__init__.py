"""apta.synth: the Yosys synthesis report (synth.py)."""
