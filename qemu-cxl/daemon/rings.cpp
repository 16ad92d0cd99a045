// The rings (RINGS.md): guests' request slots into the RTL's queues (checked, refused or held back
// by the rejoin rate), the RTL's responses and invalidations out to the guests' rings, and what the
// daemon itself learns from the flits on the way (versions, owed acks, rejoins).
#include <cinttypes>
#include <cstring>

#include "VMemoryServer.h"
#include "daemon.h"

namespace apta_memd {

void Daemon::refuse(unsigned g, const apta_slot::Decoded& d) {
  Guest& G = guests_[g];
  G.refusals++;
  Flit f;
  memcpy(f.data(), d.flit, APTA_FLIT_BYTES);  // the refused flit, echoed verbatim
  if (G.refusals <= 20 || G.refusals % 1000 == 0)
    say("error: guest %u slot seq %u refused (%s, %s)%s", g, d.seq, APTA_ERR_NAME[d.refused], d.why,
         G.refusals == 20 ? " [further refusals of this guest logged every 1000th]" : "");
  emit(G.rsp, f, d.refused, d.seq, g, "refusal");
}

// Reads guest g's request ring into its request / ack queues (refusing what the RTL must not see;
// the slot's checks are apta_slot::decode, slot.cpp).
void Daemon::pull_ring(unsigned g) {
  Guest& G = guests_[g];
  uint64_t head = R_.ld64(g, G.req_off + APTA_RING_HEAD);
  if (!apta_slot::ring_sane(head, G.req_tail, R_.slots)) {
    if (!G.broken) {
      G.broken = true;
      say("error: guest %u request ring head %" PRIu64 " runs away from tail %" PRIu64 " (S %u): ring ignored",
           g, head, G.req_tail, R_.slots);
      fence(g, "broken ring");
    }
    return;
  }
  if (G.broken) {
    G.broken = false;
    say("guest %u request ring sane again (head %" PRIu64 ", tail %" PRIu64 ")", g, head, G.req_tail);
  }
  // A few slots per cycle: enough to keep the port busy, bounded so one guest cannot hog the loop.
  uint64_t tail0 = G.req_tail;
  for (int n = 0; n < 4 && G.req_tail < head; n++) {
    apta_slot::Decoded d;
    apta_slot::decode(R_.guest[g] + apta_slot_off(G.req_off, G.req_tail, R_.slots), g, d);
    bool is_ack = d.op == APTA_OP_ObjBIRsp;
    if (!is_ack && G.req_q.size() >= REQ_Q_MAX) break;  // the RTL port is behind: leave it in the ring
    if (is_ack && G.ack_q.size() >= ACK_Q_MAX) break;
    if (d.kind != apta_slot::Kind::Refused && d.op == APTA_OP_Rejoin) {
      uint64_t wait_ms = 0;            // over the rate: the Rejoin (and what follows it) waits in the ring
      if (!G.rejoin.take(opt_.rejoin_rate, opt_.rejoin_burst, now_ns(), wait_ms)) {
        if (!G.rejoin_held) {
          G.rejoin_held = true;
          G.rejoins_held++;
          say("guest %u rejoins faster than --rejoin-rate %g/s (burst %g): its Rejoin waits %" PRIu64 " ms in the ring",
              g, opt_.rejoin_rate, opt_.rejoin_burst, wait_ms);
        }
        break;
      }
      G.rejoin_held = false;
    }
    if (d.kind == apta_slot::Kind::Refused) {
      refuse(g, d);
    } else {
      Flit f;
      memcpy(f.data(), d.flit, APTA_FLIT_BYTES);
      (is_ack ? G.ack_q : G.req_q).push_back(f);
      if (tlog_.on()) (is_ack ? tidx_ack_[g] : tidx_req_[g]).push_back(G.req_tail);
    }
    G.req_tail++;
  }
  // stored only when it moved: the guest polls this line, a store per cycle would bounce it
  if (G.req_tail != tail0) R_.st64(g, G.req_off + APTA_RING_TAIL, G.req_tail);
}

void Daemon::flush(OutRing& r) {
  while (!r.backlog.empty()) {
    uint64_t tail = R_.ld64(r.g, r.off + APTA_RING_TAIL);
    if (r.head - tail >= R_.slots) return;  // full (or a garbage tail: treated as full)
    const OutRing::Slot& s = r.backlog.front();
    uint8_t* slot = R_.guest[r.g] + apta_slot_off(r.off, r.head, R_.slots);
    memset(slot, 0, APTA_SLOT_BYTES);
    apta_st16(slot, APTA_SLOT_FLIT_BITS, APTA_FLIT_BITS);
    apta_st16(slot, APTA_SLOT_REFUSED, s.refused);
    apta_st32(slot, APTA_SLOT_SEQ, s.seq);
    memcpy(slot + APTA_SLOT_FLIT, s.flit.data(), APTA_FLIT_BYTES);
    r.head++;
    R_.st64(r.g, r.off + APTA_RING_HEAD, r.head);  // release: the slot is visible before head
    r.backlog.pop_front();
  }
}

void Daemon::emit(OutRing& r, const Flit& f, uint16_t refused, uint32_t seq, unsigned g, const char* what) {
  if (r.backlog.size() >= BACKLOG_MAX) {
    if (r.dropped++ == 0) say("error: guest %u does not consume its %s ring: dropping", g, what);
    return;
  }
  r.backlog.push_back({f, refused, refused ? seq : r.seq++});
  flush(r);
}

void Daemon::trace(const char* port, const Flit& f) {
  if (!opt_.trace) return;
  unsigned op = apta_opcode(f.data());
  say("trace %s cycle %" PRIu64 " %s server %u epoch %u obj %u", port, cycles, apta_msg_name(op),
      unsigned(apta_bits_get(f.data(), APTA_OPCODE_BITS, APTA_P_serverBits)),
      unsigned(apta_bits_get(f.data(), APTA_OPCODE_BITS + APTA_P_serverBits, APTA_P_epochBits)),
      op == APTA_OP_Rejoin || op == APTA_OP_RejoinAck || op == APTA_OP_Fence
          ? 0u : unsigned(apta_bits_get(f.data(), APTA_OPCODE_BITS + APTA_P_serverBits + APTA_P_epochBits, APTA_P_objIdBits)));
}

// What leaves the RTL: each flit goes to its server's ring, after the daemon notes what the API needs from it.
void Daemon::on_rsp(const Flit& f) {
  unsigned g = server_of(f);
  unsigned op = apta_opcode(f.data());
  if (g >= N) { say("error: rsp flit for server %u", g); return; }
  rsp_out++;
  if (op == APTA_OP_PutCommit) {
    apta_PutCommit m;
    apta_unpack_PutCommit(f.data(), &m);
    uint64_t v = ++versions_[m.obj];
    auto c = cancelled_.find(m.obj);
    if (c != cancelled_.end() && v >= c->second) cancelled_.erase(c);   // made after all
    maybe_pending_.insert(m.obj);    // the commit's round made the old sharers owe acks
    if (opt_.mutant_commit_waits && (held_commits_.size() || (st_pending_ & ~(1u << g)))) {
      held_commits_.push_back(f);
      return;
    }
  } else if (op == APTA_OP_GetRetry) {
    get_retries++;                   // the hold table was full: the guest library backs off and resends
  } else if (op == APTA_OP_GetCancelled) {
    get_cancelled++;
  } else if (op == APTA_OP_RejoinAck) {
    apta_RejoinAck m;
    apta_unpack_RejoinAck(f.data(), &m);
    say("rejoin: guest %u in epoch %u", g, m.epoch);
    guests_[g].hb_change_ns = now_ns();  // a fresh lease from the rejoin
  } else if (op == APTA_OP_RejoinRefused) {
    apta_RejoinRefused m;
    apta_unpack_RejoinRefused(f.data(), &m);
    say("rejoin refused: guest %u is at its last epoch %u (epochs are never reused; fenced until the "
        "memory server is reset)", g, m.epoch);
  }
  emit(guests_[g].rsp, f, 0, 0, g, "response");
}

void Daemon::on_snp(const Flit& f) {
  unsigned g = server_of(f);
  if (g >= N) { say("error: snp flit for server %u", g); return; }
  snp_out++;
  if (apta_opcode(f.data()) == APTA_OP_ObjBISnp) {
    apta_ObjBISnp m;
    apta_unpack_ObjBISnp(f.data(), &m);
    maybe_pending_.insert(m.obj);
  }
  emit(guests_[g].inv, f, 0, 0, g, "invalidation");
}

void Daemon::on_ctrl_resp(const Flit& f) {
  unsigned op = apta_opcode(f.data());
  unsigned g = server_of(f);
  unsigned e = unsigned(apta_bits_get(f.data(), APTA_OPCODE_BITS + APTA_P_serverBits, APTA_P_epochBits));
  if (op == APTA_OP_Fence && g < N) fence_queued_ &= ~(1u << g);
  if (op == APTA_OP_RejoinAck) {
    say("rejoin (control plane): server %u in epoch %u", g, e);
    if (g < N) guests_[g].hb_change_ns = now_ns();
  }
  if (op == APTA_OP_RejoinRefused)
    say("rejoin refused (control plane): server %u is at its last epoch %u (fenced until the memory server "
        "is reset)", g, e);
  ctrl_resp_.push_back(f);
  if (ctrl_resp_.size() > 64) ctrl_resp_.pop_front();
}

void Daemon::on_err() {
  VMemoryServer& t = *top_;
  unsigned code = t.io_err_bits_code & 15;
  // fenceAbort and zombie are the expected consequences of a fence: logged like the others, but a
  // flood (a zombie guest streaming requests) is thinned out
  if (++err_logged_ <= 200 || err_logged_ % 1000 == 0)
    say("error: rtl err %s server %u obj %u txn %u opcode %u msgCode %u field %u", APTA_ERR_NAME[code],
         unsigned(t.io_err_bits_server), unsigned(t.io_err_bits_obj), unsigned(t.io_err_bits_txn),
         unsigned(t.io_err_bits_opcode), unsigned(t.io_err_bits_msgCode), unsigned(t.io_err_bits_field));
}

// A guest's ObjGet naming a cancelled version of an object that has not reached it: answered
// GetCancelled (the OSC's own answer to a held get, same fields) instead of entering the RTL, where
// it would be held for a commit that will never come. Checked at the head of the guest's queue, so
// a get is either here before the cancel (then in the RTL, answered by io_cancel) or after it.
bool Daemon::cancelled_get(unsigned g, const Flit& f) {
  if (cancelled_.empty() || apta_opcode(f.data()) != APTA_OP_ObjGet) return false;
  apta_ObjGet m;
  apta_unpack_ObjGet(f.data(), &m);
  auto c = cancelled_.find(m.obj);
  if (m.version == 0 || c == cancelled_.end() || m.version < c->second || m.version <= version(m.obj)) return false;
  apta_GetCancelled r{};
  r.server = g;
  r.epoch = m.epoch;
  r.obj = m.obj;
  r.version = m.version;
  Flit out{};
  apta_pack_GetCancelled(out.data(), &r);
  get_cancelled++;
  say("get of object %u version %" PRIu64 " by guest %u: cancelled (from version %" PRIu64 " on)", unsigned(m.obj),
      uint64_t(m.version), g, c->second);
  emit(guests_[g].rsp, out, 0, 0, g, "response");
  return true;
}

}  // namespace apta_memd
