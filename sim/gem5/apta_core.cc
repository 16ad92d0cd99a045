#include "apta_core.hh"

#include <cmath>
#include <cstring>

#include "base/logging.hh"
#include "sim/system.hh"

namespace gem5
{

AptaCore::AptaCore(const Params &p)
    : ClockedObject(p),
      port(name() + ".port", *this, p.mshrs, p.line_bytes),
      fillPort(name() + ".fill_port", *this, p.mshrs, p.line_bytes),
      cpi(p.cpi), lineBytes(p.line_bytes), flushWindow(p.flush_window), memBase(p.mem_range.start()),
      frames(p.mem_range.size() / (uint64_t(p.line_bytes) * kPageLines)),
      stepEvent([this] { access(); }, name() + ".step")
{
    fatal_if(frames == 0, "%s: mem_range holds no page", name());
}

void
AptaCore::init()
{
    ClockedObject::init();
    fatal_if(!port.isConnected() || !fillPort.isConnected(),
             "%s: port and fill_port must be connected", name());
    port.setRequestorId(params().system->getRequestorId(this, "data"));
    fillPort.setRequestorId(params().system->getRequestorId(this, "fill"));
}

Port &
AptaCore::getPort(const std::string &if_name, PortID idx)
{
    if (if_name == "port")
        return port;
    if (if_name == "fill_port")
        return fillPort;
    return ClockedObject::getPort(if_name, idx);
}

// First-touch placement: frames are handed out in order and reused round-robin once local
// memory is exhausted (a warning; the traces' footprints are far below it).
Addr
AptaCore::translate(uint64_t key)
{
    const uint64_t page = key / kPageLines;
    auto it = pageTable.find(page);
    if (it == pageTable.end()) {
        if (nextFrame == frames)
            warn_once("%s: local memory exhausted, frames are reused", name());
        it = pageTable.emplace(page, nextFrame++ % frames).first;
    }
    return memBase + (it->second * kPageLines + key % kPageLines) * lineBytes;
}

void
AptaCore::replay(const ::apta::TraceInstance &tr, int i, ::apta::Phase ph,
                 const ::apta::Slots &s, std::function<void()> done)
{
    panic_if(trace, "%s: a phase is already being replayed", name());
    trace = &tr;
    slots = s;
    inst = i;
    next = tr.phase_begin[ph];
    end = tr.phase_begin[ph + 1];
    phaseDone = std::move(done);
    computeThenAccess();
}

// the next event's ops, then its lines
void
AptaCore::computeThenAccess()
{
    if (next == end) {
        trace = nullptr;
        auto done = std::move(phaseDone);
        done();
        return;
    }
    carry += double(trace->events[next].ops) * cpi;
    const Cycles c(uint64_t(std::floor(carry)));
    carry -= double(uint64_t(c));
    schedule(stepEvent, clockEdge(c));
}

void
AptaCore::access()
{
    const ::apta::Event &ev = trace->events[next++];
    ++events;
    // the event's lines in trace order, bit 0 marking a write (line addresses are aligned)
    constexpr Addr kWrite = 1;
    auto addrs = std::make_shared<std::vector<Addr>>();
    auto expect = std::make_shared<std::vector<uint64_t>>();  // per access: the stamp it must not be older than (0: unchecked)
    for (uint32_t k = 0; k < ev.nranges; ++k) {
        const ::apta::Range &rg = trace->ranges[ev.first_range + k];
        // an object the function got lives in the window; one it puts is built in local
        // memory and leaves by the put (a logged put in CXL: the log first, then in place)
        const bool local = rg.slot == 0xFF;
        const bool inWindow = !local && home != ObjectHome::Local && trace->objects[rg.slot].kind == "get";
        for (uint32_t l = 0; l < rg.lines; ++l) {
            Addr a;
            if (local)
                a = translate(::apta::local_line_key(inst, rg.first_line + l));
            else if (!inWindow)
                a = translate(::apta::object_line_key(slots.obj[rg.slot], slots.ver[rg.slot], rg.first_line + l));
            else
                a = window(slots.obj[rg.slot], rg.first_line + l);
            addrs->push_back(a | (rg.write ? kWrite : 0));
            expect->push_back(inWindow && !rg.write ? stamp(slots.obj[rg.slot], slots.ver[rg.slot]) : 0);
        }
    }
    lines += addrs->size();
    auto b = std::make_shared<AptaLinePort::Batch>();
    b->n = addrs->size();
    b->addrOf = [addrs](uint64_t k) { return (*addrs)[k] & ~kWrite; };
    b->isWrite = [addrs](uint64_t k) { return ((*addrs)[k] & kWrite) != 0; };
    if (home != ObjectHome::Local)
        b->checkData = [this, expect](uint64_t k, PacketPtr pkt) {
            const uint64_t e = (*expect)[k];
            if (e)
                checkStamp(uint32_t(e >> 32), uint32_t(e), pkt);
        };
    const uint64_t g = gen;
    b->done = [this, g](Tick, Tick) { if (g == gen) computeThenAccess(); };
    port.enqueue(b);
}

void
AptaCore::fill(uint32_t obj, uint32_t ver, uint64_t first, uint64_t n)
{
    auto b = std::make_shared<AptaLinePort::Batch>();
    b->n = n;
    b->addrOf = [this, obj, ver, first](uint64_t k) { return translate(::apta::object_line_key(obj, ver, first + k)); };
    b->isWrite = [](uint64_t) { return true; };
    b->writeCmd = MemCmd::WriteLineReq;
    fillPort.enqueue(b);
}

void
AptaCore::setObjectHome(ObjectHome h, std::function<Addr(uint32_t, uint64_t)> w)
{
    fatal_if(h != ObjectHome::Local && !w, "%s: objects in the CXL window need the window's map", name());
    home = h;
    window = std::move(w);
}

void
AptaCore::checkStamp(uint32_t obj, uint32_t ver, PacketPtr pkt)
{
    if (pkt->getSize() != lineBytes)
        return;
    uint64_t got;
    std::memcpy(&got, pkt->getConstPtr<uint8_t>() + lineBytes - sizeof(got), sizeof(got));
    const uint32_t gotObj = uint32_t(got >> 32), gotVer = got ? uint32_t(got) : 1;
    ++checked;
    if ((got && gotObj != obj) || gotVer < ver) {
        ++stale;
        warn_once("%s: a stale line of object %u: version %u where %u was got", name(), obj, gotVer, ver);
    }
}

// An uncached stream of n lines over the link (a logged put's writes, a CXL uncached get's reads):
// the caches pass each request down; done() when the last is answered, unless the server died.
std::shared_ptr<AptaLinePort::Batch>
AptaCore::uncachedBatch(std::function<Addr(uint64_t)> addr_of, uint64_t n, bool write, std::function<void()> done)
{
    auto b = std::make_shared<AptaLinePort::Batch>();
    b->n = n;
    b->addrOf = std::move(addr_of);
    b->isWrite = [write](uint64_t) { return write; };
    b->uncacheable = [](uint64_t) { return true; };
    const uint64_t g = gen;
    b->done = [this, g, done = std::move(done)](Tick, Tick) { if (g == gen) done(); };
    return b;
}

void
AptaCore::writeThrough(std::function<Addr(uint64_t)> addr_of, uint64_t n, uint64_t line_stamp,
                       std::function<void()> done)
{
    auto b = uncachedBatch(std::move(addr_of), n, true, std::move(done));
    b->writeBytes = lineBytes;  // a whole-line write: the caches drop their copy
    b->fillData = [this, line_stamp](uint64_t, PacketPtr pkt) {
        if (pkt->getSize() == lineBytes)
            std::memcpy(pkt->getPtr<uint8_t>() + lineBytes - sizeof(line_stamp), &line_stamp, sizeof(line_stamp));
    };
    port.enqueue(b);
}

void
AptaCore::readThrough(std::function<Addr(uint64_t)> addr_of, uint64_t n, uint64_t line_stamp,
                      std::function<void()> done)
{
    auto b = uncachedBatch(std::move(addr_of), n, false, std::move(done));
    b->checkData = [this, line_stamp](uint64_t, PacketPtr pkt) {
        checkStamp(uint32_t(line_stamp >> 32), uint32_t(line_stamp), pkt);
    };
    port.enqueue(b);
}

void
AptaCore::flushCopy(uint32_t obj, uint32_t ver, uint64_t n, std::function<void()> done)
{
    // only lines on pages the core has placed can be cached
    auto addrs = std::make_shared<std::vector<Addr>>();
    for (uint64_t l = 0; l < n; ++l) {
        const uint64_t key = ::apta::object_line_key(obj, ver, l);
        auto it = pageTable.find(key / kPageLines);
        if (it != pageTable.end())
            addrs->push_back(memBase + (it->second * kPageLines + key % kPageLines) * lineBytes);
    }
    auto b = std::make_shared<AptaLinePort::Batch>();
    b->n = addrs->size();
    b->addrOf = [addrs](uint64_t k) { return (*addrs)[k]; };
    b->readCmd = MemCmd::CleanInvalidReq;
    b->flags = Request::CLEAN | Request::INVALIDATE | Request::DST_POC;
    // Clean-invalidates of dirty L1 lines, all at once, stall gem5's classic caches: each sends a
    // WriteClean whose retry the L2 crossbar never gives while the others hold it, and the point
    // of coherence answers a clean-invalidate only with its WriteClean. `flush_window` at a time.
    b->window = flushWindow;
    const uint64_t g = gen;
    b->done = [this, g, done = std::move(done)](Tick, Tick) { if (g == gen) done(); };
    port.enqueue(b);
}

void
AptaCore::abort()
{
    ++gen;
    port.cancelAll();
    fillPort.cancelAll();
    if (stepEvent.scheduled())
        deschedule(stepEvent);
    trace = nullptr;
    phaseDone = nullptr;
}

} // namespace gem5
