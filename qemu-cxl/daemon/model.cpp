// The model harness: the Verilated memory server clocked one cycle per call of cycle(), its ports
// driven from the guests' queues, the API's requests and the server file (AXI), and read back.
#include <unistd.h>

#include <cstring>

#include "VMemoryServer.h"
#include "daemon.h"
#include "verilated.h"
#ifdef APTA_MEMD_TRACE_PROBE
#include "VMemoryServer___024root.h"  // the core's result queue, public_flat_rd (trace.vlt)
#endif

namespace apta_memd {

namespace {
// Verilator wide signals <-> flit bytes (both little-endian, 32-bit words)
template <class W>
void to_wide(W& w, const uint8_t* bytes, size_t n) {
  for (size_t i = 0; i < sizeof(w) / 4; i++) w[i] = 0;
  memcpy(&w[0], bytes, n);
}
template <class W>
void from_wide(uint8_t* bytes, const W& w, size_t n) {
  memcpy(bytes, &w[0], n);
}
}  // namespace

Daemon::Daemon(const Options& o, VerilatedContext* ctx) : opt_(o), top_(new VMemoryServer(ctx)) {
  instance_ = "apta-memd-" + std::to_string(getpid()) + "-" + std::to_string(now_ns());
}
Daemon::~Daemon() = default;   // here, where VMemoryServer is complete

unsigned Daemon::epoch_of(unsigned g) const {
  unsigned e[N] = {};
#define X(i) e[i] = top_->io_status_epoch_##i;
  APTA_FOR_EACH_SERVER(X)
#undef X
  return e[g];
}

void Daemon::reset() {
  VMemoryServer& t = *top_;
  t.reset = 1;
  for (int i = 0; i < 4; i++) {
    t.clock = 0; t.eval();
    t.clock = 1; t.eval();
  }
  t.io_memBytes = R_.data_bytes();   // the allocator's arena ends at the region's data area
  t.reset = 0;
  t.clock = 0; t.eval();
  commit_last_ = t.io_status_commitSeq;
  fenced_last_ = t.io_status_fenced;
  st_fenced_ = t.io_status_fenced, st_pending_ = t.io_status_pending, st_sched_ = t.io_status_schedulable;
  tfenced_ = t.io_status_fenced;
}

// ---- one clock cycle ----------------------------------------------------------------------------
void Daemon::cycle() {
  VMemoryServer& t = *top_;
  if (tlog_.on()) tlog_.cycle(cycles);
  // 1. inputs for this cycle
  for (unsigned g = 0; g < N; g++) pull_ring(g);
  for (unsigned g = 0; g < N; g++)
    while (!guests_[g].req_q.empty() && cancelled_get(g, guests_[g].req_q.front())) {
      guests_[g].req_q.pop_front();
      if (tlog_.on()) tidx_req_[g].pop_front();
    }
  bool gate = gate_inputs_;
  Flit* req_head[N] = {};
  for (unsigned g = 0; g < N; g++) {
    req_valid_[g] = !gate && !guests_[g].req_q.empty();
    if (req_valid_[g]) req_head[g] = &guests_[g].req_q.front();
  }
#define X(i)                                                                   \
  t.io_req_##i##_valid = req_valid_[i];                                        \
  if (req_valid_[i]) to_wide(t.io_req_##i##_bits, req_head[i]->data(), APTA_FLIT_BYTES);
  APTA_FOR_EACH_SERVER(X)
#undef X
  // birsp: round-robin over the guests' ack queues, held until accepted
  if (!ack_valid_ && !gate) {
    for (unsigned k = 0; k < N; k++) {
      unsigned g = (ack_rr_ + k) % N;
      if (!guests_[g].ack_q.empty()) { ack_valid_ = true; ack_from_ = g; ack_rr_ = g + 1; break; }
    }
  }
  t.io_birsp_valid = ack_valid_ && !gate;
  if (ack_valid_) to_wide(t.io_birsp_bits, guests_[ack_from_].ack_q.front().data(), APTA_FLIT_BYTES);
  t.io_ctrl_valid = !ctrl_q_.empty();
  if (!ctrl_q_.empty()) to_wide(t.io_ctrl_bits, ctrl_q_.front().data(), APTA_FLIT_BYTES);
  t.io_mapUpd_valid = !map_q_.empty();
  if (!map_q_.empty()) {
    t.io_mapUpd_bits_obj = map_q_.front().obj;
    t.io_mapUpd_bits_size = map_q_.front().size;
    t.io_mapUpd_bits_valid = map_q_.front().valid;
  }
  t.io_query_valid = !query_q_.empty();
  if (!query_q_.empty()) t.io_query_bits_obj = query_q_.front();
  t.io_cancel_valid = !cancel_q_.empty();
  if (!cancel_q_.empty()) t.io_cancel_bits = cancel_q_.front();
  // outputs are always taken: the rings have backlogs, so the shared ports never wait for a guest
  t.io_rsp_ready = 1;
  t.io_snp_ready = 1;
  t.io_ctrlResp_ready = 1;
  // AXI slave: always ready for addresses and data; one R and one B per cycle
  t.axi_ar_ready = 1;
  t.axi_aw_ready = 1;
  t.axi_w_ready = 1;
  t.axi_r_valid = !rd_q_.empty();
  if (!rd_q_.empty()) {
    const Rd& r = rd_q_.front();
    uint8_t line[LINE] = {};
    bool ok = r.addr % LINE == 0 && r.addr + LINE <= R_.data_bytes();
    if (ok) memcpy(line, R_.base + APTA_DATA_OFFSET + r.addr, LINE);
    to_wide(t.axi_r_bits_data, line, LINE);
    t.axi_r_bits_id = r.id;
    t.axi_r_bits_resp = ok ? 0 : 2;  // SLVERR outside the data area (the RTL reports axiError)
    t.axi_r_bits_last = 1;
  }
  t.axi_b_valid = !b_q_.empty();
  if (!b_q_.empty()) {
    t.axi_b_bits_id = b_q_.front().id;
    t.axi_b_bits_resp = b_q_.front().resp;
  }

  // 2. settle the combinational paths with these inputs, then see which handshakes fire
  t.clock = 0;
  t.eval();
  bool req_fire[N];
#define X(i) req_fire[i] = req_valid_[i] && t.io_req_##i##_ready;
  APTA_FOR_EACH_SERVER(X)
#undef X
  bool ack_fire = t.io_birsp_valid && t.io_birsp_ready;
  bool ctrl_fire = t.io_ctrl_valid && t.io_ctrl_ready;
  bool map_fire = t.io_mapUpd_valid && t.io_mapUpd_ready;
  bool query_fire = t.io_query_valid && t.io_query_ready;
  bool cancel_fire = t.io_cancel_valid && t.io_cancel_ready;
  bool r_fire = t.axi_r_valid && t.axi_r_ready;
  bool b_fire = t.axi_b_valid && t.axi_b_ready;
  bool rsp_fire = t.io_rsp_valid, snp_fire = t.io_snp_valid, cresp_fire = t.io_ctrlResp_valid;
  Flit rsp, snp, cresp;
  if (rsp_fire) from_wide(rsp.data(), t.io_rsp_bits, APTA_FLIT_BYTES);
  if (snp_fire) from_wide(snp.data(), t.io_snp_bits, APTA_FLIT_BYTES);
  if (cresp_fire) from_wide(cresp.data(), t.io_ctrlResp_bits, APTA_FLIT_BYTES);
  if (t.axi_ar_valid) rd_q_.push_back({unsigned(t.axi_ar_bits_id), uint64_t(t.axi_ar_bits_addr)});
  if (t.axi_aw_valid) aw_q_.push_back({unsigned(t.axi_aw_bits_id), uint64_t(t.axi_aw_bits_addr)});
  if (t.axi_w_valid) {
    Wd w;
    from_wide(w.data.data(), t.axi_w_bits_data, LINE);
    w.strb = t.axi_w_bits_strb;
    w_q_.push_back(w);
  }
  if (tlog_.on()) {
#ifdef APTA_MEMD_TRACE_PROBE
    // the OTC's decision entering the core's result queue: a get Served, a put Committed (the
    // linearization points; their flits leave cycles later)
    const auto* rp = t.rootp;
    if (rp->MemoryServer__DOT__core__DOT__respQ__DOT__io_enq_valid && rp->MemoryServer__DOT__core__DOT__respQ__DOT__io_enq_ready)
      tlog_.core(rp->MemoryServer__DOT__core__DOT__respQ__DOT__io_enq_bits_op, rp->MemoryServer__DOT__core__DOT__respQ__DOT__io_enq_bits_server,
                 rp->MemoryServer__DOT__core__DOT__respQ__DOT__io_enq_bits_obj, rp->MemoryServer__DOT__core__DOT__respQ__DOT__io_enq_bits_result);
#endif
    for (unsigned g = 0; g < N; g++)
      if (req_fire[g]) tlog_.flit("req", guests_[g].req_q.front().data(), int(g), tidx_req_[g].front());
    if (ack_fire) tlog_.flit("birsp", guests_[ack_from_].ack_q.front().data(), int(ack_from_), tidx_ack_[ack_from_].front());
    if (rsp_fire) tlog_.flit("rsp", rsp.data());
    if (snp_fire) tlog_.flit("snp", snp.data());
    if (t.io_err_valid)
      tlog_.err(t.io_err_bits_code & 15, t.io_err_bits_server, t.io_err_bits_obj, t.io_err_bits_txn, t.io_err_bits_opcode);
  }
  if (t.io_err_valid) on_err();
  if (t.io_mapUpdDone_valid)
    map_done_.push_back({uint32_t(t.io_mapUpdDone_bits_obj), unsigned(t.io_mapUpdDone_bits_code), uint64_t(t.io_mapUpdDone_bits_base)});
  if (t.io_queryResp_valid) {
    ObjState s{bool(t.io_queryResp_bits_hit), t.io_queryResp_bits_state, t.io_queryResp_bits_sharers,
               t.io_queryResp_bits_schedulableFor, {}};
#define X(i) s.pend[i] = t.io_queryResp_bits_pend_##i;
    APTA_FOR_EACH_SERVER(X)
#undef X
    query_resp_.push_back({uint32_t(t.io_queryResp_bits_obj), s});
  }

  // 3. the rising edge
  t.clock = 1;
  t.eval();
  cycles++;
  // every change of what the status port shows (a fence, a rejoin, an ack clearing a server's
  // pending bit) is a state change of the control-plane API: it advances `seq` (controlplane.yaml)
  if (t.io_status_fenced != st_fenced_ || t.io_status_pending != st_pending_ || t.io_status_schedulable != st_sched_) {
    st_fenced_ = t.io_status_fenced, st_pending_ = t.io_status_pending, st_sched_ = t.io_status_schedulable;
    status_changes_++;
  }
  if (tlog_.on() && t.io_status_fenced != tfenced_) {
    for (unsigned g = 0; g < N; g++)
      if (((t.io_status_fenced ^ tfenced_) >> g) & 1u) tlog_.fenced(g, (t.io_status_fenced >> g) & 1u, epoch_of(g));
    tfenced_ = t.io_status_fenced;
  }

  // 4. retire what fired, deliver what left
  for (unsigned g = 0; g < N; g++)
    if (req_fire[g]) {
      trace("req", guests_[g].req_q.front()); guests_[g].req_q.pop_front(); guests_[g].requests++; req_fires++;
      if (tlog_.on()) tidx_req_[g].pop_front();
    }
  if (ack_fire) {
    trace("birsp", guests_[ack_from_].ack_q.front()); guests_[ack_from_].ack_q.pop_front(); ack_valid_ = false; ack_fires++;
    if (tlog_.on()) tidx_ack_[ack_from_].pop_front();
  }
  if (map_fire) map_q_.pop_front();
  if (query_fire) query_q_.pop_front();
  if (cancel_fire) cancel_q_.pop_front();
  if (r_fire) { rd_q_.pop_front(); axi_rd++; }
  if (b_fire) b_q_.pop_front();
  while (!aw_q_.empty() && !w_q_.empty()) {  // single-beat writes: one W per AW, in order
    const Rd& a = aw_q_.front();
    const Wd& w = w_q_.front();
    bool ok = a.addr % LINE == 0 && a.addr + LINE <= R_.data_bytes();
    if (ok) {
      uint8_t* d = R_.base + APTA_DATA_OFFSET + a.addr;
      for (unsigned i = 0; i < LINE; i++)
        if ((w.strb >> i) & 1u) d[i] = w.data[i];
    }
    b_q_.push_back({a.id, ok ? 0u : 2u});
    aw_q_.pop_front();
    w_q_.pop_front();
    axi_wr++;
  }
  if (ctrl_fire) { trace("ctrl", ctrl_q_.front()); ctrl_q_.pop_front(); }
  if (rsp_fire) { trace("rsp", rsp); on_rsp(rsp); }
  if (snp_fire) { trace("snp", snp); on_snp(snp); }
  if (cresp_fire) { trace("ctrlResp", cresp); on_ctrl_resp(cresp); }
  while (!held_commits_.empty()) {     // the mutant: release once no other server owes an ack
    unsigned hg = server_of(held_commits_.front());
    if (st_pending_ & ~(1u << hg)) break;
    emit(guests_[hg].rsp, held_commits_.front(), 0, 0, hg, "response");
    held_commits_.pop_front();
  }
}

}  // namespace apta_memd
