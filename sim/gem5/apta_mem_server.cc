#include "apta_mem_server.hh"

#include <sstream>

#include "base/logging.hh"
#include "json.hpp"
#include "sim/system.hh"
#include "system.hpp"
#include "vectors.hpp"

namespace gem5
{

AptaMemServer::AptaMemServer(const Params &p)
    : ClockedObject(p), port(name() + ".port", *this, p.max_outstanding, p.line_bytes),
      lineBytes(p.line_bytes), memBase(p.mem_range.start()), memSize(p.mem_range.size()),
      dropBisnp(p.mutant == "drop_bisnp")
{
    fatal_if(!p.mutant.empty() && !dropBisnp, "%s: mutant: 'drop_bisnp' or none, got '%s'", name(), p.mutant);
    for (int i = 0; i < p.port_bisnp_ports_connection_count; ++i)
        bisnpPorts.push_back(std::make_unique<AptaLinePort>(name() + ".bisnp_ports" + std::to_string(i), *this,
                                                             p.max_outstanding, p.line_bytes));
}

void
AptaMemServer::init()
{
    ClockedObject::init();
    fatal_if(!port.isConnected(), "%s: port must be connected to the DRAM controller", name());
    port.setRequestorId(params().system->getRequestorId(this));
    for (size_t i = 0; i < bisnpPorts.size(); ++i)
        bisnpPorts[i]->setRequestorId(params().system->getRequestorId(this, "bisnp" + std::to_string(i)));
}

Port &
AptaMemServer::getPort(const std::string &if_name, PortID idx)
{
    if (if_name == "port")
        return port;
    if (if_name == "bisnp_ports" && idx >= 0 && size_t(idx) < bisnpPorts.size())
        return *bisnpPorts[idx];
    return ClockedObject::getPort(if_name, idx);
}

void
AptaMemServer::layout(const std::vector<uint64_t> &bytes)
{
    const Addr page = 4096;  // objects start on pages, as the OSC's segment table maps them
    base.clear();
    Addr next = memBase;
    for (uint64_t b : bytes) {
        base.push_back(next);
        next += (std::max<uint64_t>(b, lineBytes) + page - 1) / page * page;
    }
    base.push_back(next);  // the redo log
    fatal_if(next + page > memBase + memSize,
             "%s: the workflow's objects (%llu bytes) do not fit mem_range", name(),
             (unsigned long long)(next - memBase));
}

Addr
AptaMemServer::lineAddr(uint32_t obj, uint64_t line) const
{
    panic_if(base.empty(), "%s: lineAddr before layout", name());
    const Addr b = obj == ::apta::kRedoLog ? base.back() : base.at(obj);
    const Addr limit = memBase + memSize;
    // the log wraps inside its area's remainder of memory
    const Addr a = b + line * lineBytes;
    return a < limit ? a : b + ((a - b) % (limit - b)) / lineBytes * lineBytes;
}

void
AptaMemServer::backInvalidate(int x, uint32_t obj, uint64_t n, std::function<void()> done)
{
    fatal_if(x < 0 || size_t(x) >= bisnpPorts.size(), "%s: no BISnp port for compute server %d", name(), x);
    if (dropBisnp) {  // answered at once, the sharer's caches untouched
        schedule(new EventFunctionWrapper(std::move(done), name() + ".dropped_bisnp", true), curTick());
        return;
    }
    auto batch = std::make_shared<AptaLinePort::Batch>();
    batch->n = n;
    batch->addrOf = [this, obj](uint64_t k) { return lineAddr(obj, k); };
    batch->readCmd = MemCmd::CleanInvalidReq;
    batch->flags = Request::CLEAN | Request::INVALIDATE | Request::DST_POC;
    batch->done = [done = std::move(done)](Tick, Tick) { done(); };
    bisnpPorts[size_t(x)]->enqueue(batch);
}

void
AptaMemServer::access(uint32_t obj, uint64_t first_line, uint64_t n, bool write,
                      std::function<void(Tick, Tick)> done)
{
    auto batch = std::make_shared<AptaLinePort::Batch>();
    batch->n = n;
    batch->addrOf = [this, obj, first_line](uint64_t k) { return lineAddr(obj, first_line + k); };
    if (write) {
        // the memory server writes whole lines (a put's staged lines, a drain, the redo log)
        batch->isWrite = [](uint64_t) { return true; };
        batch->writeCmd = MemCmd::WriteLineReq;
    }
    batch->done = std::move(done);
    port.enqueue(batch);
}

std::string
AptaMemServer::replayVectors(const std::string &path, const std::string &mutant)
{
    std::ostringstream err, out;
    try {
        ::apta::ReplayStats st = ::apta::replay_vectors(path, ::apta::parse_mutant(mutant), err);
        out << "{\"vectors\": " << ::json::quote(path) << ", \"mutant\": "
            << ::json::quote(mutant.empty() ? "none" : mutant) << ", \"scenarios\": " << st.scenarios
            << ", \"steps\": " << st.steps << ", \"failed\": " << st.failed
            << ", \"report\": " << ::json::quote(err.str()) << "}";
    } catch (const std::exception &e) {
        out << "{\"vectors\": " << ::json::quote(path) << ", \"error\": " << ::json::quote(e.what()) << "}";
    }
    return out.str();
}

} // namespace gem5
