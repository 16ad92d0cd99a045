"""apta.testbench: the cocotb regression's shared benches: the core and memory-server BFMs, the SRAM model, the scoreboard, the compute-server models."""
