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
    flush_window = Param.Unsigned(1, "the invalidation handler's clean-invalidates in flight at most")


class AptaMemServer(ClockedObject):
    """The memory server's object data path: objects in its DRAM, line batches at its clock."""

    type = "AptaMemServer"
    cxx_header = "apta_mem_server.hh"
    cxx_class = "gem5::AptaMemServer"
    cxx_exports = [PyBindMethod("replayVectors")]

    port = RequestPort("object data, to the DRAM controller")
    bisnp_ports = VectorRequestPort("back-invalidation snoops, one port per compute server's link (c1 first)")
    system = Param.System(Parent.any, "the system (requestor ids)")
    max_outstanding = Param.Unsigned("line accesses (and snoops per link) in flight at most")
    line_bytes = Param.Unsigned("line size")
    mem_range = Param.AddrRange("the memory server's DRAM")
    mutant = Param.String("", "a deliberate bug, to show the stale-data check has teeth: drop_bisnp "
                              "(back-invalidations answered without snooping)")


class AptaCxlLink(ClockedObject):
    """A compute server's CXL link to the memory server: six channels of 68-byte flits with
    credits, serialization, latency and jitter (cxl_link.hh)."""

    type = "AptaCxlLink"
    cxx_header = "cxl_link.hh"
    cxx_class = "gem5::AptaCxlLink"

    host_side = ResponsePort("requests for the CXL window, from the host's memory system")
    dev_side = RequestPort("the requests, into the memory server")
    bisnp_dev_side = ResponsePort("back-invalidation snoops, from the memory server")
    bisnp_host_side = RequestPort("the snoops, into the host's coherent crossbar")
    ranges = VectorParam.AddrRange("the CXL window (the memory server's memory)")
    flit_bytes = Param.Unsigned("bytes on the wire per flit (68-byte flit mode)")
    line_bytes = Param.Unsigned("payload bytes of a data flit")
    gbps = Param.Float("bandwidth per direction, Gbit/s")
    latency = Param.Latency("one-way latency of a flit after serialization")
    jitter_cv = Param.Float("the latency's coefficient of variation (0: none)")
    seed = Param.UInt64("the jitter's random seed")
    req_credits = Param.Unsigned("M2S Req credits")
    rwd_credits = Param.Unsigned("M2S RwD credits (flits)")
    birsp_credits = Param.Unsigned("M2S BIRsp credits")
    ndr_credits = Param.Unsigned("S2M NDR credits")
    drs_credits = Param.Unsigned("S2M DRS credits (flits)")
    bisnp_credits = Param.Unsigned("S2M BISnp credits")
    queue_entries = Param.Unsigned("requests queued per channel pair before a sender is refused")
    response_entries = Param.Unsigned("requests awaiting their response at most")


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
    links = VectorParam.AptaCxlLink("the compute servers' links to the memory server (c1 first)")
    packet_link = Param.Bool(True, "the CXL configurations' traffic as packets through the links (False: "
                                   "apta-sim's analytical link and bulk object copies, to measure what the "
                                   "packets cost)")
