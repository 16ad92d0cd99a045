#!/usr/bin/env python3
"""Host runner of the FaaS workflows (the CLI of apta.hostrun, python/apta/hostrun.py):

    .venv/bin/python workloads/run.py phi --size tiny
    .venv/bin/python workloads/run.py all --size paper --repeat 3 --json build/workloads/paper.json
"""
import sys

from apta.hostrun import main

if __name__ == "__main__":
    sys.exit(main())
