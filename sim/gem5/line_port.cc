#include "line_port.hh"

#include <cstring>

#include "base/logging.hh"

namespace gem5
{

AptaLinePort::AptaLinePort(const std::string &name, ClockedObject &o,
                           unsigned max_outstanding, unsigned line_bytes)
    : RequestPort(name), owner(o), maxOutstanding(max_outstanding),
      lineBytes(line_bytes), issueEvent([this] { issue(); }, name + ".issue")
{
    fatal_if(maxOutstanding == 0, "%s: needs at least one outstanding access", name);
}

void
AptaLinePort::enqueue(std::shared_ptr<Batch> b)
{
    if (b->n == 0) {
        if (b->done)
            b->done(curTick(), curTick());
        return;
    }
    queue.push_back(std::move(b));
    scheduleIssue();
}

void
AptaLinePort::cancelAll()
{
    for (auto &b : queue)
        b->cancelled = true;
    queue.clear();
    // A packet the peer refused stays: the peer owes it a retry, and recvReqRetry must find it
    // to resend. Its batch is cancelled, so its response is dropped like any other in flight.
    if (blocked) {
        auto *tag = dynamic_cast<Tag *>(blocked->senderState);
        panic_if(!tag, "%s: a refused packet without our sender state", name());
        tag->batch->cancelled = true;
    }
}

void
AptaLinePort::scheduleIssue()
{
    if (!issueEvent.scheduled() && !blocked && !queue.empty() && inFlight < maxOutstanding)
        owner.schedule(issueEvent, owner.clockEdge(Cycles(0)));
}

// one access per owner cycle
void
AptaLinePort::issue()
{
    if (blocked || queue.empty() || inFlight >= maxOutstanding)
        return;
    auto b = queue.front();
    if (b->window && b->issued - b->completed >= b->window)
        return;  // a response of this batch issues the next (recvTimingResp)
    const uint64_t k = b->issued++;
    if (b->issued == b->n)
        queue.pop_front();
    const bool write = b->isWrite && b->isWrite(k);
    const MemCmd cmd = write ? b->writeCmd : b->readCmd;
    const unsigned size = cmd == MemCmd::WriteReq ? b->writeBytes : lineBytes;
    Request::FlagsType flags = b->flags;
    if (b->uncacheable && b->uncacheable(k))
        flags |= Request::UNCACHEABLE;
    auto req = std::make_shared<Request>(b->addrOf(k), size, flags, requestor);
    PacketPtr pkt = new Packet(req, cmd);
    pkt->allocate();
    if (write) {
        std::memset(pkt->getPtr<uint8_t>(), 0, size);
        if (b->fillData)
            b->fillData(k, pkt);
    }
    pkt->pushSenderState(new Tag(b, k));
    ++inFlight;
    ++sent;
    if (!sendTimingReq(pkt))
        blocked = pkt;
    else if (!queue.empty() && inFlight < maxOutstanding)
        owner.schedule(issueEvent, owner.clockEdge(Cycles(1)));
}

void
AptaLinePort::recvReqRetry()
{
    panic_if(!blocked, "%s: retry without a refused packet", name());
    PacketPtr pkt = blocked;
    blocked = nullptr;
    if (!sendTimingReq(pkt)) {
        blocked = pkt;
        return;
    }
    if (!queue.empty() && inFlight < maxOutstanding && !issueEvent.scheduled())
        owner.schedule(issueEvent, owner.clockEdge(Cycles(1)));
}

bool
AptaLinePort::recvTimingResp(PacketPtr pkt)
{
    auto *tag = dynamic_cast<Tag *>(pkt->popSenderState());
    panic_if(!tag, "%s: response without our sender state", name());
    std::shared_ptr<Batch> b = std::move(tag->batch);
    const uint64_t k = tag->k;
    delete tag;
    if (!b->cancelled && b->checkData && pkt->isRead() && pkt->hasData())
        b->checkData(k, pkt);
    delete pkt;
    --inFlight;
    if (!b->cancelled) {
        if (b->completed++ == 0)
            b->first = curTick();
        if (b->completed == b->n && b->done)
            b->done(b->first, curTick());
    }
    scheduleIssue();
    return true;
}

} // namespace gem5
