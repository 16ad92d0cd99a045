// A compute server's core in gem5 (Table II: 3.0 GHz, int/fp ops at a fixed CPI): it replays
// one phase of a function instance's trace at a time. Per trace event, its ops take ops x CPI
// cycles, then every line the event touches goes to the L1 data cache, one per cycle, at most
// `mshrs` in flight; the next event starts when all of them are answered. Lines are placed in
// the server's local memory by a first-touch page table (4 KiB frames), except, in CXL cached,
// the lines of the objects a function got: those live in the memory server, reached (and
// cached) through the CXL window. A second port fills fetched objects into the LLC (whole-line
// writes), as the GET controller does (§III-D1).
#ifndef APTA_GEM5_APTA_CORE_HH
#define APTA_GEM5_APTA_CORE_HH

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "line_port.hh"
#include "params/AptaCore.hh"
#include "sim/clocked_object.hh"
#include "system.hpp"
#include "trace.hpp"

namespace gem5
{

class AptaCore : public ClockedObject
{
  public:
    PARAMS(AptaCore);
    explicit AptaCore(const Params &p);

    Port &getPort(const std::string &if_name, PortID idx = InvalidPortID) override;
    void init() override;

    // Replay phase `ph` of instance `inst`'s trace; done() when its last event has finished.
    void replay(const ::apta::TraceInstance &tr, int inst, ::apta::Phase ph,
                const ::apta::Slots &slots, std::function<void()> done);
    // Where the lines of objects a function got are: local frames (objects are fetched into the
    // LLC), or the CXL window (CXL cached), where window(obj, line) is the address of line `line`
    // of object obj.
    enum class ObjectHome { Local, CxlWindow };
    void setObjectHome(ObjectHome h, std::function<Addr(uint32_t, uint64_t)> window);
    ObjectHome objectHome() const { return home; }
    // Lines [first, first + n) of object `obj` (version `ver`) arrived: write them into the LLC.
    void fill(uint32_t obj, uint32_t ver, uint64_t first, uint64_t n);
    // Write n lines through to the memory server (a store and a cache-line flush each, as a logged
    // put persists them): addrOf(k) in the CXL window, each line stamped with `stamp` (below);
    // done() when the last is acknowledged.
    void writeThrough(std::function<Addr(uint64_t)> addrOf, uint64_t n, uint64_t stamp, std::function<void()> done);
    // Read n lines from the memory server uncached (a CXL uncached get): addrOf(k) in the CXL
    // window, each checked against `stamp` (below); done() when the last has arrived.
    void readThrough(std::function<Addr(uint64_t)> addrOf, uint64_t n, uint64_t stamp, std::function<void()> done);

    // The copy of object obj in version ver (its first n lines) leaves the caches: a clean and
    // invalidate (CleanInvalidReq to the point of coherence) of each of its lines the core ever
    // touched, as Āpta's invalidation handler flushes a copy; done() when all are through.
    void flushCopy(uint32_t obj, uint32_t ver, uint64_t n, std::function<void()> done);

    // Stale data is observable: a line a put writes through carries its object and version in
    // its last 8 bytes; every read of a line of an object the function got from the window is
    // compared with the version it got (a line never written is the input, version 1). A line
    // older than that is stale: a back-invalidation that was lost or late.
    static uint64_t stamp(uint32_t obj, uint32_t ver) { return (uint64_t(obj) << 32) | ver; }
    uint64_t checkedLines() const { return checked; }
    uint64_t staleLines() const { return stale; }
    // The server died: whatever it replays or fills stops, nothing it had in flight reports.
    void abort();

    uint64_t eventsReplayed() const { return events; }
    uint64_t lineAccesses() const { return lines; }

  private:
    static constexpr unsigned kPageLines = 64;  // 4 KiB pages of 64-byte lines

    AptaLinePort port, fillPort;
    const double cpi;
    const unsigned lineBytes;
    const unsigned flushWindow;  // the handler's clean-invalidates in flight (flushCopy)
    const Addr memBase;
    const uint64_t frames;

    std::unordered_map<uint64_t, uint64_t> pageTable;  // line key / 64 -> frame
    uint64_t nextFrame = 0;
    ObjectHome home = ObjectHome::Local;
    std::function<Addr(uint32_t, uint64_t)> window;

    // the phase being replayed
    const ::apta::TraceInstance *trace = nullptr;
    ::apta::Slots slots;
    int inst = -1;
    uint32_t next = 0, end = 0;
    double carry = 0;  // fractional cycles of the ops replayed so far
    uint64_t gen = 0;  // bumped by abort(): callbacks of an older phase do nothing
    std::function<void()> phaseDone;
    EventFunctionWrapper stepEvent;

    uint64_t events = 0, lines = 0, checked = 0, stale = 0;
    void checkStamp(uint32_t obj, uint32_t ver, PacketPtr pkt);
    std::shared_ptr<AptaLinePort::Batch> uncachedBatch(std::function<Addr(uint64_t)> addrOf, uint64_t n, bool write,
                                                       std::function<void()> done);

    Addr translate(uint64_t key);
    void computeThenAccess();
    void access();
};

} // namespace gem5

#endif // APTA_GEM5_APTA_CORE_HH
