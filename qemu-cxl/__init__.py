"""apta.qemu: the CXL emulation's Python: launcher, guest image, harness, executor, placer, benchmarks."""
