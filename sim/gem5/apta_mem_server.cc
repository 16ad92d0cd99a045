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
      lineBytes(p.line_bytes), memBase(p.mem_range.start()), memSize(p.mem_range.size())
{
}

void
AptaMemServer::init()
{
    ClockedObject::init();
    fatal_if(!port.isConnected(), "%s: port must be connected to the DRAM controller", name());
    port.setRequestorId(params().system->getRequestorId(this));
}

Port &
AptaMemServer::getPort(const std::string &if_name, PortID idx)
{
    if (if_name == "port")
        return port;
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

void
AptaMemServer::access(uint32_t obj, uint64_t first_line, uint64_t n, bool write,
                      std::function<void(Tick, Tick)> done)
{
    const Addr b = obj == ::apta::kRedoLog ? base.back() : base.at(obj);
    const Addr limit = memBase + memSize;
    const unsigned line = lineBytes;
    auto batch = std::make_shared<AptaLinePort::Batch>();
    batch->n = n;
    // the log wraps inside its area's remainder of memory
    batch->addrOf = [b, first_line, line, limit](uint64_t k) {
        Addr a = b + (first_line + k) * line;
        return a < limit ? a : b + ((a - b) % (limit - b)) / line * line;
    };
    if (write)
        batch->isWrite = [](uint64_t) { return true; };
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
