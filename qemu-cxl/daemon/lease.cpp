// Liveness and the main loop: the guests' heartbeat leases and QEMU processes (a guest that misses
// either is fenced on io_ctrl), the daemon's own heartbeat, the loop that clocks the RTL, and the
// counts --stats prints at exit.
#include <errno.h>
#include <signal.h>

#include <cinttypes>
#include <cstdio>

#include "VMemoryServer.h"
#include "daemon.h"

namespace apta_memd {

void Daemon::fence(unsigned g, const char* why) {
  unsigned fenced = top_->io_status_fenced;
  if (((fenced | fence_queued_) >> g) & 1u) return;
  fence_queued_ |= 1u << g;
  apta_Fence m{g, epoch_of(g)};
  Flit f;
  apta_pack_Fence(f.data(), &m);
  ctrl_q_.push_back(f);
  say("fence: guest %u epoch %u (%s)", g, m.epoch, why);
}

// The QEMU process of guest g (its -pidfile): once a live pid was seen there, the pid dying or
// the file vanishing fences the guest at once instead of after the lease. The next QEMU of g
// writes a new pid and is watched in turn.
void Daemon::watch_qemu(unsigned g) {
  Guest& G = guests_[g];
  char path[4096];
  snprintf(path, sizeof path, opt_.pidfile.c_str(), g);
  long pid = 0;
  if (FILE* f = fopen(path, "r")) {
    if (fscanf(f, "%ld", &pid) != 1) pid = 0;
    fclose(f);
  }
  bool alive = pid > 0 && (kill(pid_t(pid), 0) == 0 || errno == EPERM);
  if (alive) {
    if (G.qemu_pid != pid) say("guest %u: watching QEMU pid %ld (%s)", g, pid, path);
    G.qemu_pid = pid;
  } else if (G.qemu_pid) {
    say("guest %u: QEMU pid %ld exited", g, G.qemu_pid);
    G.qemu_pid = 0;
    fence(g, "QEMU process exited");
  }
}

void Daemon::housekeeping(uint64_t t) {
  tlog_.flush();
  apta_st64(R_.base, APTA_HDR_DAEMON_HEARTBEAT, t);
  for (unsigned g = 0; g < N; g++) {
    Guest& G = guests_[g];
    apta_st64(R_.guest[g], APTA_HDR_DAEMON_HEARTBEAT, t);
    uint64_t hb = R_.ld64(g, APTA_GUEST_AREA + APTA_CTL_HEARTBEAT);
    if (hb != G.hb_last) { G.hb_last = hb; G.hb_change_ns = t; }
    if (!live(g, t)) fence(g, "heartbeat lease expired");
    if (!opt_.pidfile.empty() && t - G.pid_checked_ns > 50000000ull) {
      G.pid_checked_ns = t;
      watch_qemu(g);
    }
    flush(G.rsp);
    flush(G.inv);
  }
  unsigned fenced = top_->io_status_fenced;
  for (unsigned g = 0; g < N; g++)
    if (((fenced ^ fenced_last_) >> g) & 1u)
      say("%s: guest %u (epoch %u)", (fenced >> g) & 1u ? "fenced" : "unfenced", g, epoch_of(g));
  fenced_last_ = fenced;
}

void Daemon::stats(double secs) const {
  double active = secs - double(slept_ns_) / 1e9;
  fprintf(stderr, "apta-memd stats: active (not idle-waiting) %.3f s: %.0f cycles/s, %.0f requests/s\n", active,
          cycles / active, (req_fires + ack_fires) / active);
  fprintf(stderr,
          "apta-memd stats: %.3f s, %" PRIu64 " cycles (%.0f cycles/s), %" PRIu64 " requests + %" PRIu64
          " acks accepted (%.0f requests/s), %" PRIu64 " rsp + %" PRIu64 " snp flits out, AXI %" PRIu64
          " reads %" PRIu64 " writes\n",
          secs, cycles, cycles / secs, req_fires, ack_fires, (req_fires + ack_fires) / secs, rsp_out, snp_out,
          axi_rd, axi_wr);
  fprintf(stderr, "apta-memd stats: versioned gets: %" PRIu64 " GetRetry (hold table full), %" PRIu64 " GetCancelled\n",
          get_retries, get_cancelled);
  fprintf(stderr, "apta-memd stats: api: %" PRIu64 " directory queries for status/object answers (%" PRIu64
                  " cycles), %zu objects registered\n", api_queries, api_cycles, objects_.size());
  for (unsigned g = 0; g < N; g++)
    fprintf(stderr, "apta-memd stats: guest %u: %" PRIu64 " requests, %" PRIu64 " refused, %" PRIu64
                    " response + %" PRIu64 " invalidation flits dropped, rejoins over the rate: %" PRIu64
                    " held in the ring, %" PRIu64 " refused at the API\n",
            g, guests_[g].requests, guests_[g].refusals, guests_[g].rsp.dropped, guests_[g].inv.dropped,
            guests_[g].rejoins_held, guests_[g].rejoins_refused);
}

// The main loop: a cycle, and between cycles the housekeeping (every ms), the API, and an idle wait.
void Daemon::run() {
  set_state(APTA_DAEMON_SERVING);
  say("serving %s: %u guests, %u ring slots, flit %u bits, lease %" PRIu64 " ms%s", opt_.file.c_str(), N,
       R_.slots, APTA_FLIT_BITS, opt_.lease_ms, listen_fd >= 0 ? "" : ", no API");
  if (opt_.mutant_commit_waits) say("MUTANT commit-waits-for-acks: PutCommit held while another server owes an ack");
  uint64_t last_hk = 0, quiet_since = 0;
  unsigned quiet = 0;
  while (!g_stop) {
    uint64_t before = req_fires + ack_fires + rsp_out + snp_out + axi_rd + axi_wr;
    cycle();
    bool busy = before != req_fires + ack_fires + rsp_out + snp_out + axi_rd + axi_wr || !top_->io_idle;
    for (unsigned g = 0; g < N && !busy; g++)
      busy = !guests_[g].req_q.empty() || !guests_[g].ack_q.empty() || !guests_[g].rsp.backlog.empty() ||
             !guests_[g].inv.backlog.empty();
    busy = busy || !ctrl_q_.empty() || !rd_q_.empty() || !b_q_.empty();
    quiet = busy ? 0 : quiet + 1;
    if ((cycles & 63) == 0 || quiet > 64) {
      uint64_t t = now_ns();
      if (t - last_hk > 1000000ull) { housekeeping(t); last_hk = t; }
      // Idle: wait a little instead of spinning the RTL (the machine is shared with the guests),
      // waking for the API at once. Rings are polled again after 100 us, after 500 us once the
      // daemon has been idle for 20 ms (idle CPU ~12% -> ~3% of a core; a request arriving
      // after a pause waits <= 0.5 ms, small against a TCG guest's own speed).
      if (quiet == 65) quiet_since = t;
      if (quiet > 64) {
        uint64_t s0 = now_ns();
        serve_api(t - quiet_since > 20000000ull ? 500000 : 100000);
        slept_ns_ += now_ns() - s0;
      } else if ((cycles & 1023) == 0) {
        serve_api(0);
      }
    }
  }
  set_state(APTA_DAEMON_STOPPED);
}

}  // namespace apta_memd
