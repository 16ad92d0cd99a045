"""apta's shared Python library: what several components import.

    apta.paths       where the repository's shared files are (schema/, build/)
    apta.schema      the language-neutral definitions in schema/ (errors, core enums, parameters)
    apta.messages    the message schema codec and its Chisel / C generators (schema/messages.json)
    apta.layout      the shared CXL region's layout and its C generator (schema/layout.json)
    apta.cells       the protocol-table cells (rtl/CORE.md, rtl/MEMSERVER.md)
    apta.vectors_io  the model checker's test vectors: load and validate
    apta.history     the store-contract history checker (P1-P4, docs/history-checker.md)
    apta.workflow    the FaaS workflow model and its validation (workloads/workflows/), the
                     workflow patterns (workloads/patterns/: every layer's instance, the TLA+
                     module WorkflowPatterns) and the compute-server models' workflow scripts
    apta.sim_synth   synthetic traces for the simulator's tests and benchmark
    apta.summary     build/verify/summary.json, shared by both model checkers

Installed editable into the repository's venv by the Makefile (`pip install -e .`), so the files
stay where they are read and nothing manipulates sys.path.
"""
