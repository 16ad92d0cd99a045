// A request port that issues batches of 64-byte line accesses for its owner: at most
// `maxOutstanding` in flight, at most one new access per owner clock cycle, the peer's
// back-pressure (retry) honoured. A batch reports when its first and its last response are in.
// The compute servers' cores (trace lines, LLC fills) and the memory server (object data in DRAM)
// all move lines through this one class.
#ifndef APTA_GEM5_LINE_PORT_HH
#define APTA_GEM5_LINE_PORT_HH

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "mem/packet.hh"
#include "mem/port.hh"
#include "mem/request.hh"
#include "sim/clocked_object.hh"
#include "sim/eventq.hh"

namespace gem5
{

class AptaLinePort : public RequestPort
{
  public:
    static constexpr unsigned kStoreBytes = 8;  // a 64-bit store
    struct Batch
    {
        uint64_t n = 0;                        // accesses in the batch
        std::function<Addr(uint64_t)> addrOf;  // the k-th access's line address
        std::function<bool(uint64_t)> isWrite; // null: all reads
        // A core's store writes part of a line (a store word), so the L1 reads the line for
        // ownership first, as a CPU does (a whole-line WriteReq would be promoted to a
        // WriteLineReq and skip the read); fills write whole lines (WriteLineReq).
        MemCmd writeCmd = MemCmd::WriteReq;
        unsigned writeBytes = kStoreBytes;     // of a WriteReq (a line write through to memory: the line)
        // what a non-write access is: a read, or a back-invalidation snoop (CleanInvalidReq to the
        // point of coherence) sent into a host's crossbar
        MemCmd readCmd = MemCmd::ReadReq;
        Request::FlagsType flags = 0;           // of every access in the batch
        std::function<bool(uint64_t)> uncacheable;  // null: none (CXL uncached: object lines)
        // a write's data (it starts zeroed) and a read response's check, by access (may be null)
        std::function<void(uint64_t, PacketPtr)> fillData, checkData;
        std::function<void(Tick, Tick)> done;  // (first response, last response); may be null
        unsigned window = 0;                   // of this batch in flight at most (0: the port's limit)
        uint64_t issued = 0, completed = 0;
        Tick first = 0;
        bool cancelled = false;
    };

    AptaLinePort(const std::string &name, ClockedObject &owner,
                 unsigned maxOutstanding, unsigned lineBytes);

    void setRequestorId(RequestorID id) { requestor = id; }
    void enqueue(std::shared_ptr<Batch> b);
    // drop every queued batch; responses still in flight (and of a refused packet, resent on the
    // peer's retry) are ignored
    void cancelAll();
    unsigned outstanding() const { return inFlight; }
    uint64_t accesses() const { return sent; }

  protected:
    bool recvTimingResp(PacketPtr pkt) override;
    void recvReqRetry() override;
    void recvRangeChange() override {}

  private:
    struct Tag : public Packet::SenderState
    {
        std::shared_ptr<Batch> batch;
        uint64_t k;  // the access's index in its batch
        Tag(std::shared_ptr<Batch> b, uint64_t k) : batch(std::move(b)), k(k) {}
    };

    ClockedObject &owner;
    const unsigned maxOutstanding, lineBytes;
    RequestorID requestor = 0;
    std::deque<std::shared_ptr<Batch>> queue;
    PacketPtr blocked = nullptr;  // refused by the peer: resent on its retry
    unsigned inFlight = 0;
    uint64_t sent = 0;
    EventFunctionWrapper issueEvent;

    void scheduleIssue();
    void issue();
};

} // namespace gem5

#endif // APTA_GEM5_LINE_PORT_HH
