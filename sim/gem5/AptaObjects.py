# The apta SimObjects (README.md here). Every value the config script gives them comes from
# sim/params.json (configs/run_apta.py reads it); there are no defaults for Table II parameters here.
from m5.params import *
from m5.proxy import *
from m5.objects.ClockedObject import ClockedObject
from m5.SimObject import SimObject
from m5.util.pybind import PyBindMethod


class AptaCore(ClockedObject):
    """A compute server's core: replays trace phases through its caches at a fixed CPI."""

    type = "AptaCore"
    cxx_header = "apta_core.hh"
    cxx_class = "gem5::AptaCore"

    port = RequestPort("trace lines, to the L1 data cache")
    fill_port = RequestPort("fetched objects' lines, written into the LLC")
    system = Param.System(Parent.any, "the system (requestor ids)")
    cpi = Param.Float("cycles per int/fp op (Table II)")
    mshrs = Param.Unsigned("line accesses in flight at most (the L2's MSHRs, Table II)")
    line_bytes = Param.Unsigned("cache line size")
    mem_range = Param.AddrRange("this server's local memory (the page table's frames)")


class AptaMemServer(ClockedObject):
    """The memory server's object data path: objects in its DRAM, line batches at its clock."""

    type = "AptaMemServer"
    cxx_header = "apta_mem_server.hh"
    cxx_class = "gem5::AptaMemServer"
    cxx_exports = [PyBindMethod("replayVectors")]

    port = RequestPort("object data, to the DRAM controller")
    system = Param.System(Parent.any, "the system (requestor ids)")
    max_outstanding = Param.Unsigned("line accesses in flight to DRAM at most")
    line_bytes = Param.Unsigned("line size")
    mem_range = Param.AddrRange("the memory server's DRAM")


class AptaWorkflow(SimObject):
    """One workflow run: sim/src/system.cpp on the gem5 backend."""

    type = "AptaWorkflow"
    cxx_header = "apta_workflow.hh"
    cxx_class = "gem5::AptaWorkflow"
    cxx_exports = [PyBindMethod("writeResult")]

    plan = Param.String("the plan (sim/plan.py)")
    scenario = Param.String("one scenario, as JSON text (sim/README.md)")
    params_file = Param.String("sim/params.json")
    cores = VectorParam.AptaCore("the compute servers' cores, c1 first")
    mem_server = Param.AptaMemServer("the memory server")
