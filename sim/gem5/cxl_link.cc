#include "cxl_link.hh"

#include <algorithm>
#include <cmath>

#include "base/intmath.hh"
#include "base/logging.hh"
#include "sim/core.hh"

namespace gem5
{

namespace
{

constexpr unsigned kChannelsPerDirection = 3;

double
ns(Tick t)
{
    return double(t) / double(sim_clock::as_int::ns);
}

} // anonymous namespace

const char *
AptaCxlLink::channelName(Channel c)
{
    static const char *const names[NumChannels] = {
        "m2s_req", "m2s_rwd", "m2s_birsp", "s2m_ndr", "s2m_drs", "s2m_bisnp"};
    return names[c];
}

AptaCxlLink::AptaCxlLink(const Params &p)
    : ClockedObject(p),
      hostSide(name() + ".host_side", *this, false),
      bisnpDevSide(name() + ".bisnp_dev_side", *this, true),
      devSide(name() + ".dev_side", *this, false),
      bisnpHostSide(name() + ".bisnp_host_side", *this, true),
      ranges(p.ranges.begin(), p.ranges.end()),
      flitBytes(p.flit_bytes), lineBytes(p.line_bytes), queueEntries(p.queue_entries),
      responseEntries(p.response_entries),
      flitTicks(Tick(std::llround(double(p.flit_bytes) * 8.0 / p.gbps * double(sim_clock::as_int::ns)))),
      latency(p.latency), creditLatency(p.latency), jitterCv(p.jitter_cv), rng(p.seed),
      stats(*this)
{
    fatal_if(p.gbps <= 0, "%s: gbps must be positive", name());
    fatal_if(flitTicks == 0, "%s: a flit takes no time at %f Gbit/s", name(), p.gbps);
    fatal_if(jitterCv < 0, "%s: jitter_cv must not be negative", name());
    fatal_if(queueEntries == 0 || responseEntries == 0, "%s: queue_entries and response_entries must be positive",
             name());
    const unsigned credits[NumChannels] = {p.req_credits, p.rwd_credits, p.birsp_credits,
                                           p.ndr_credits, p.drs_credits, p.bisnp_credits};
    for (unsigned c = 0; c < NumChannels; ++c) {
        fatal_if(credits[c] == 0, "%s: %s needs at least one credit", name(), channelName(Channel(c)));
        chans[c].credits = chans[c].maxCredits = credits[c];
        chans[c].deliverEvent = std::make_unique<EventFunctionWrapper>(
            [this, c] { deliver(Channel(c)); }, name() + "." + channelName(Channel(c)) + ".deliver");
    }
    // a data message must fit the credits of its channel, or it would wait forever
    fatal_if(chans[M2SRwD].maxCredits < 1 || chans[S2MDRS].maxCredits < 1, "%s: data channels need credits", name());
    for (unsigned d = 0; d < NumDirections; ++d)
        wires[d].sendEvent = std::make_unique<EventFunctionWrapper>(
            [this, d] { trySend(Direction(d)); }, name() + (d == M2S ? ".m2s" : ".s2m") + ".send");
}

Port &
AptaCxlLink::getPort(const std::string &if_name, PortID idx)
{
    if (if_name == "host_side")
        return hostSide;
    if (if_name == "dev_side")
        return devSide;
    if (if_name == "bisnp_dev_side")
        return bisnpDevSide;
    if (if_name == "bisnp_host_side")
        return bisnpHostSide;
    return ClockedObject::getPort(if_name, idx);
}

void
AptaCxlLink::init()
{
    ClockedObject::init();
    fatal_if(!hostSide.isConnected() || !devSide.isConnected(), "%s: host_side and dev_side must be connected",
             name());
    hostSide.sendRangeChange();
    if (bisnpDevSide.isConnected())
        bisnpDevSide.sendRangeChange();
}

// ---- entering the link ------------------------------------------------------------------------

unsigned
AptaCxlLink::flitsOf(Channel c, const PacketPtr pkt) const
{
    if (c != M2SRwD && c != S2MDRS)
        return 1;
    return std::max<unsigned>(1, divCeil(pkt->getSize(), lineBytes));
}

unsigned
AptaCxlLink::queued(Channel a, Channel b) const
{
    return unsigned(chans[a].tx.size() + chans[b].tx.size());
}

// A request is taken if its channel's queue has room and, when it needs one, its response has a
// place to wait; otherwise it is refused and the sender gets a retry when a message leaves.
bool
AptaCxlLink::acceptRequest(ResponseSide &side, PacketPtr pkt, bool snoops)
{
    if (side.refused)
        return false;  // a retry is owed: the sender tries again then
    const Channel c = snoops ? S2MBISnp : (pkt->isWrite() && pkt->hasData() ? M2SRwD : M2SReq);
    unsigned &waiting = snoops ? outstandingSnoops : outstandingResponses;
    const bool full = (snoops ? queued(S2MBISnp, S2MBISnp) : queued(M2SReq, M2SRwD)) >= queueEntries;
    if (full || (pkt->needsResponse() && waiting >= responseEntries)) {
        side.refused = true;
        ++stats.refusedRequests;
        if (full)
            ++stats.refusedForQueue;
        return false;
    }
    if (pkt->needsResponse())
        ++waiting;
    if (snoops)
        snoopSent[pkt] = curTick();
    enqueue(c, pkt);
    return true;
}

// Responses always have room: it was set aside when their request was taken.
void
AptaCxlLink::acceptResponse(bool snoops, PacketPtr pkt)
{
    enqueue(snoops ? M2SBIRsp : (pkt->hasData() ? S2MDRS : S2MNDR), pkt);
}

void
AptaCxlLink::enqueue(Channel c, PacketPtr pkt)
{
    // the packet reaches us after the crossbar's header and payload delays
    Msg m{pkt, flitsOf(c, pkt), curTick() + pkt->headerDelay + pkt->payloadDelay};
    pkt->headerDelay = pkt->payloadDelay = 0;
    fatal_if(m.flits > chans[c].maxCredits, "%s: a %u-flit message on %s, which has %u credits", name(), m.flits,
             channelName(c), chans[c].maxCredits);
    chans[c].tx.push_back(m);
    trySend(directionOf(c));
}

void
AptaCxlLink::message(Channel c, uint64_t flits, Tick not_before, Tick min_end, std::function<void()> arrived,
                     std::function<void(uint64_t, uint64_t)> piece)
{
    // not_before may lie in the past: a reply whose DRAM reads the backend reports when the last
    // is through streamed out from its first line (the wire, if it was idle then, is back-dated)
    const Tick ready = not_before;
    flits = std::max<uint64_t>(flits, 1);
    for (uint64_t sent = 0; sent < flits;) {
        const unsigned n = unsigned(std::min<uint64_t>(kMessagePiece, flits - sent));
        sent += n;
        Msg m{nullptr, std::min(n, chans[c].maxCredits), ready};
        if (piece)
            m.arrived = [piece, first = sent - n, n] { piece(first, n); };
        if (sent == flits) {
            m.minEnd = min_end;
            m.arrived = [p = std::move(m.arrived), a = std::move(arrived)] {
                if (p)
                    p();
                a();
            };
        }
        chans[c].tx.push_back(std::move(m));
    }
    trySend(directionOf(c));
}

// ---- the wire -----------------------------------------------------------------------------

Tick
AptaCxlLink::drawLatency()
{
    if (jitterCv <= 0)
        return latency;
    std::normal_distribution<double> z(0.0, 1.0);
    return Tick(std::llround(std::max(0.0, double(latency) * (1.0 + jitterCv * z(rng)))));
}

// One message onto the wire of direction d: the channels take turns (round robin), a channel
// whose head lacks credits is passed over (and counted as stalled once per message).
void
AptaCxlLink::trySend(Direction d)
{
    Wire &w = wires[d];
    if (w.sendEvent->scheduled())
        return;
    const Tick now = curTick();
    if (w.freeAt > now) {
        schedule(*w.sendEvent, w.freeAt);
        return;
    }
    const unsigned base = d == M2S ? M2SReq : S2MNDR;
    Tick nextReady = MaxTick;
    for (unsigned k = 0; k < kChannelsPerDirection; ++k) {
        const Channel c = Channel(base + (w.rr + k) % kChannelsPerDirection);
        Chan &ch = chans[c];
        if (ch.tx.empty())
            continue;
        Msg &m = ch.tx.front();
        if (m.enqueued > now) {
            nextReady = std::min(nextReady, m.enqueued);
            continue;
        }
        if (ch.credits < m.flits) {
            if (!m.creditStalled) {
                m.creditStalled = true;
                ++stats.creditStalls[c];
            }
            continue;  // returnCredits() tries again
        }
        ch.credits -= m.flits;
        w.rr = (w.rr + k + 1) % kChannelsPerDirection;
        // a packet goes now; a protocol message ready earlier on a wire idle since then went then
        const Tick start = m.pkt ? now : std::max(w.freeAt, std::min(m.enqueued, now));
        const Tick busy = std::max<Tick>(m.flits * flitTicks, m.minEnd > start ? m.minEnd - start : 0);
        w.freeAt = start + busy;
        m.arrival = std::max(w.freeAt + drawLatency(), ch.lastArrival);  // no overtaking on a channel
        ch.lastArrival = m.arrival;
        stats.wireBusyTicks[d] += busy;
        stats.messages[c]++;
        stats.flits[c] += m.flits;
        stats.bytes[c] += m.flits * flitBytes;
        ch.rx.push_back(std::move(m));
        ch.tx.pop_front();
        // the head may have arrived already and wait for its receiver's retry
        if (!ch.deliverEvent->scheduled())
            schedule(*ch.deliverEvent, std::max(now, ch.rx.front().arrival));
        schedule(*w.sendEvent, std::max(now, w.freeAt));
        // a message left a queue: a refused sender may try again
        if (c == M2SReq || c == M2SRwD)
            hostSide.retryIfRefused();
        else if (c == S2MBISnp)
            bisnpDevSide.retryIfRefused();
        return;
    }
    if (nextReady != MaxTick)
        schedule(*w.sendEvent, nextReady);
}

void
AptaCxlLink::returnCredits(Channel c, unsigned n)
{
    auto *ev = new EventFunctionWrapper([this, c, n] {
        chans[c].credits += n;
        trySend(directionOf(c));
    }, name() + ".credit", true);
    schedule(ev, curTick() + creditLatency);
}

// ---- leaving the link ---------------------------------------------------------------------

void
AptaCxlLink::deliver(Channel c)
{
    Chan &ch = chans[c];
    while (!ch.rx.empty() && ch.rx.front().arrival <= curTick()) {
        if (ch.rx.front().pkt && !passOn(c, ch.rx.front().pkt)) {
            ++stats.receiverRefusals[c];
            return;  // the receiver refused: its retry calls deliver() again
        }
        Msg m = std::move(ch.rx.front());
        ch.rx.pop_front();
        stats.latency.sample(ns(curTick() - m.enqueued));
        returnCredits(c, m.flits);
        if (m.arrived)
            m.arrived();
    }
    if (!ch.rx.empty() && !ch.deliverEvent->scheduled())
        schedule(*ch.deliverEvent, ch.rx.front().arrival);
}

bool
AptaCxlLink::passOn(Channel c, PacketPtr pkt)
{
    switch (c) {
      case M2SReq:
      case M2SRwD:
        if (devSide.blocked)
            return false;
        if (!devSide.sendTimingReq(pkt)) {
            devSide.blocked = true;
            return false;
        }
        return true;
      case S2MBISnp:
        if (bisnpHostSide.blocked)
            return false;
        if (!bisnpHostSide.sendTimingReq(pkt)) {
            bisnpHostSide.blocked = true;
            return false;
        }
        return true;
      case S2MNDR:
      case S2MDRS:
        if (hostSide.blocked)
            return false;
        if (!hostSide.sendTimingResp(pkt)) {
            hostSide.blocked = true;
            return false;
        }
        --outstandingResponses;
        hostSide.retryIfRefused();
        return true;
      case M2SBIRsp: {
        if (bisnpDevSide.blocked)
            return false;
        auto it = snoopSent.find(pkt);
        const Tick sent = it == snoopSent.end() ? curTick() : it->second;
        if (!bisnpDevSide.sendTimingResp(pkt)) {
            bisnpDevSide.blocked = true;
            return false;
        }
        if (it != snoopSent.end())
            snoopSent.erase(it);
        stats.snoopRoundTrip.sample(ns(curTick() - sent));
        --outstandingSnoops;
        bisnpDevSide.retryIfRefused();
        return true;
      }
      default:
        panic("%s: no channel %u", name(), unsigned(c));
    }
}

void
AptaCxlLink::kick(Channel a, Channel b)
{
    for (Channel c : {a, b})
        if (!chans[c].deliverEvent->scheduled())
            deliver(c);
}

// ---- the ports ----------------------------------------------------------------------------

void
AptaCxlLink::ResponseSide::retryIfRefused()
{
    if (refused) {
        refused = false;
        sendRetryReq();
    }
}

bool
AptaCxlLink::ResponseSide::recvTimingReq(PacketPtr pkt)
{
    panic_if(pkt->cacheResponding(), "%s: a cache is responding to a packet sent over the link", name());
    return link.acceptRequest(*this, pkt, snoops);
}

void
AptaCxlLink::ResponseSide::recvRespRetry()
{
    blocked = false;
    if (snoops)
        link.kick(M2SBIRsp, M2SBIRsp);
    else
        link.kick(S2MNDR, S2MDRS);
}

// Atomic and functional accesses (gem5's fast-forward and debugger paths) cross the link at its
// unloaded latency; the timing model above is what the evaluation measures.
Tick
AptaCxlLink::ResponseSide::recvAtomic(PacketPtr pkt)
{
    const Tick wire = 2 * link.latency + 2 * link.flitTicks;
    return wire + (snoops ? link.bisnpHostSide.sendAtomic(pkt) : link.devSide.sendAtomic(pkt));
}

void
AptaCxlLink::ResponseSide::recvFunctional(PacketPtr pkt)
{
    // a write still in the link holds newer data than memory
    for (const Chan &ch : link.chans)
        for (const auto *q : {&ch.tx, &ch.rx})
            for (const Msg &m : *q)
                if (m.pkt && pkt->trySatisfyFunctional(m.pkt)) {
                    pkt->makeResponse();
                    return;
                }
    if (snoops)
        link.bisnpHostSide.sendFunctional(pkt);
    else
        link.devSide.sendFunctional(pkt);
}

AddrRangeList
AptaCxlLink::ResponseSide::getAddrRanges() const
{
    return link.ranges;
}

bool
AptaCxlLink::RequestSide::recvTimingResp(PacketPtr pkt)
{
    link.acceptResponse(snoops, pkt);
    return true;
}

void
AptaCxlLink::RequestSide::recvReqRetry()
{
    blocked = false;
    if (snoops)
        link.kick(S2MBISnp, S2MBISnp);
    else
        link.kick(M2SReq, M2SRwD);
}

// ---- statistics ---------------------------------------------------------------------------

AptaCxlLink::Stats::Stats(AptaCxlLink &l)
    : statistics::Group(&l),
      ADD_STAT(messages, statistics::units::Count::get(), "messages sent, per channel"),
      ADD_STAT(flits, statistics::units::Count::get(), "flits sent, per channel"),
      ADD_STAT(bytes, statistics::units::Byte::get(), "bytes on the wire (whole flits), per channel"),
      ADD_STAT(creditStalls, statistics::units::Count::get(),
               "messages that waited for credits at the head of their channel"),
      ADD_STAT(wireBusyTicks, statistics::units::Tick::get(), "ticks the wire was sending, per direction"),
      ADD_STAT(refusedRequests, statistics::units::Count::get(),
               "requests refused (queue or response room full) and retried"),
      ADD_STAT(refusedForQueue, statistics::units::Count::get(),
               "requests refused because their channels' queue was full (the rest: no room for the response)"),
      ADD_STAT(receiverRefusals, statistics::units::Count::get(),
               "messages the receiving port refused on arrival (it was busy), per channel"),
      ADD_STAT(latency, statistics::units::Count::get(),
               "per message: ns from entering the link to leaving it (queueing, credits, wire, latency)"),
      ADD_STAT(snoopRoundTrip, statistics::units::Count::get(),
               "per BISnp: ns from the device's snoop entering the link to its BIRsp leaving it")
{
}

void
AptaCxlLink::Stats::regStats()
{
    statistics::Group::regStats();
    for (auto *v : {&messages, &flits, &bytes, &creditStalls, &receiverRefusals}) {
        v->init(NumChannels);
        for (unsigned c = 0; c < NumChannels; ++c)
            v->subname(c, channelName(Channel(c)));
    }
    wireBusyTicks.init(NumDirections);
    wireBusyTicks.subname(M2S, "m2s");
    wireBusyTicks.subname(S2M, "s2m");
    latency.init(20);
    snoopRoundTrip.init(20);
}

} // namespace gem5
