// A CXL link between one compute server (the host) and the memory server (the device), as gem5
// components see it: the host's memory system sends requests for the CXL window into `host_side`
// and they come out of `dev_side` into the memory server; the memory server's coherence agent
// sends back-invalidation snoops into `bisnp_dev_side` and they come out of `bisnp_host_side`
// into the host's coherent crossbar, which snoops its caches.
//
// Inside, the link carries CXL's six channels (CXL 2.0 §3.3 for CXL.mem, CXL 3.0 §3.3.9 for the
// BI channels) in 68-byte flit mode: a message without data (M2S Req, S2M NDR, S2M BISnp, M2S
// BIRsp) is one flit, a message with data (M2S RwD, S2M DRS) one flit per 64-byte line. Per
// direction the flits of all its channels share one wire: each flit occupies it flit_bytes x 8 /
// bandwidth, then arrives `latency` later (jittered with coefficient of variation `jitter_cv`,
// never overtaking an earlier message of its channel). Each channel has a credit per receive
// buffer entry: a message is sent only with a credit per flit, the credit comes back one latency
// after the receiver has passed the message on, and when the receiver stops taking messages the
// credits run out and the sender's queue, then the sender, are stalled (back-pressure).
#ifndef APTA_GEM5_CXL_LINK_HH
#define APTA_GEM5_CXL_LINK_HH

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>

#include "base/statistics.hh"
#include "mem/port.hh"
#include "params/AptaCxlLink.hh"
#include "sim/clocked_object.hh"
#include "sim/eventq.hh"

namespace gem5
{

class AptaCxlLink : public ClockedObject
{
  public:
    enum Channel : unsigned { M2SReq, M2SRwD, M2SBIRsp, S2MNDR, S2MDRS, S2MBISnp, NumChannels };
    enum Direction : unsigned { M2S, S2M, NumDirections };

    PARAMS(AptaCxlLink);
    explicit AptaCxlLink(const Params &p);

    Port &getPort(const std::string &if_name, PortID idx = InvalidPortID) override;
    void init() override;

    static const char *channelName(Channel c);
    static Direction directionOf(Channel c) { return c < S2MNDR ? M2S : S2M; }

    // A message of the object protocols (an Āpta get and its data, a put's lines and its commit,
    // an object BISnp and its answer): `flits` flits on channel c, on the wire no earlier than
    // notBefore and holding it at least until minEnd (a reply streaming out of DRAM as it is
    // sent). It is sent in pieces of at most `kMessagePiece` flits, each with its credits;
    // piece(first, n) runs as flits [first, first + n) arrive (a receiver that consumes data as it
    // streams in), arrived() when the last piece reaches the other side, whose protocol engine
    // always takes it (its queues are the engine's).
    static constexpr unsigned kMessagePiece = 16;
    void message(Channel c, uint64_t flits, Tick notBefore, Tick minEnd, std::function<void()> arrived,
                 std::function<void(uint64_t, uint64_t)> piece = {});

  private:
    // the side a message leaves the link by
    class ResponseSide : public ResponsePort
    {
      public:
        ResponseSide(const std::string &name, AptaCxlLink &link, bool snoops)
            : ResponsePort(name), link(link), snoops(snoops) {}
        void retryIfRefused();
        bool refused = false;  // a request was refused: it gets a retry when the queue frees
        bool blocked = false;  // our last response was refused: wait for its retry

      protected:
        bool recvTimingReq(PacketPtr pkt) override;
        void recvRespRetry() override;
        Tick recvAtomic(PacketPtr pkt) override;
        void recvFunctional(PacketPtr pkt) override;
        AddrRangeList getAddrRanges() const override;

      private:
        AptaCxlLink &link;
        const bool snoops;  // the BISnp side (else the memory side)
    };

    class RequestSide : public RequestPort
    {
      public:
        RequestSide(const std::string &name, AptaCxlLink &link, bool snoops)
            : RequestPort(name), link(link), snoops(snoops) {}
        bool blocked = false;  // our last request was refused: wait for its retry

      protected:
        bool recvTimingResp(PacketPtr pkt) override;
        void recvReqRetry() override;
        void recvRangeChange() override {}

      private:
        AptaCxlLink &link;
        const bool snoops;
    };

    struct Msg
    {
        PacketPtr pkt;  // null: a protocol message (message())
        unsigned flits;
        Tick enqueued;
        Tick arrival = 0;
        bool creditStalled = false;
        Tick minEnd = 0;                 // the wire is held at least until then
        std::function<void()> arrived;   // a protocol message's last piece: run on arrival
    };

    struct Chan
    {
        unsigned credits = 0, maxCredits = 0;
        std::deque<Msg> tx;  // waiting for credits and the wire
        std::deque<Msg> rx;  // on the wire or arrived, in arrival order
        Tick lastArrival = 0;
        std::unique_ptr<EventFunctionWrapper> deliverEvent;  // the head of rx arrives
    };

    struct Wire
    {
        Tick freeAt = 0;
        unsigned rr = 0;  // round-robin pointer over the direction's channels
        std::unique_ptr<EventFunctionWrapper> sendEvent;  // the wire is free for the next flit
    };

    ResponseSide hostSide, bisnpDevSide;
    RequestSide devSide, bisnpHostSide;
    const AddrRangeList ranges;
    const unsigned flitBytes, lineBytes, queueEntries, responseEntries;
    const Tick flitTicks, latency, creditLatency;
    const double jitterCv;
    std::mt19937_64 rng;

    std::array<Chan, NumChannels> chans;
    std::array<Wire, NumDirections> wires;
    unsigned outstandingResponses = 0, outstandingSnoops = 0;
    std::unordered_map<PacketPtr, Tick> snoopSent;  // BISnp -> when the device sent it

    struct Stats : public statistics::Group
    {
        Stats(AptaCxlLink &link);
        void regStats() override;
        statistics::Vector messages, flits, bytes, creditStalls;
        statistics::Vector wireBusyTicks;  // per direction
        statistics::Scalar refusedRequests;
        statistics::Scalar refusedForQueue;      // of those: the channel pair's queue was full
        statistics::Vector receiverRefusals;     // per channel: the receiving port refused a message
        statistics::Histogram latency;         // per message: queued at the link to passed on
        statistics::Histogram snoopRoundTrip;  // BISnp taken from the device to its BIRsp given back
    } stats;

    unsigned queued(Channel a, Channel b) const;
    unsigned flitsOf(Channel c, const PacketPtr pkt) const;
    bool acceptRequest(ResponseSide &side, PacketPtr pkt, bool snoops);
    void acceptResponse(bool snoops, PacketPtr pkt);
    void enqueue(Channel c, PacketPtr pkt);  // the caller has checked there is room
    Tick drawLatency();
    void trySend(Direction d);
    void returnCredits(Channel c, unsigned n);
    void deliver(Channel c);
    bool passOn(Channel c, PacketPtr pkt);
    void kick(Channel a, Channel b);  // a port's retry: its channels try to pass on again
};

} // namespace gem5

#endif // APTA_GEM5_CXL_LINK_HH
