// The daemon: the Verilated memory server, its ports wired to the rack's rings and files, the
// guests' leases, and the calls the API makes on it. Its member functions live by job in
// model.cpp, region.cpp, rings.cpp, lease.cpp and control.cpp (README.md "Files").
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "api.h"
#include "http.h"
#include "memd.h"
#include "options.h"
#include "slot.h"
#include "tokens.h"
#include "tracelog.h"

class VMemoryServer;
class VerilatedContext;

namespace apta_memd {

class Daemon {
 public:
  Daemon(const Options& o, VerilatedContext* ctx);
  ~Daemon();
  int open_region();                   // maps the rack's files, writes or checks the headers; < 0 after saying why
  void set_state(uint32_t v);          // the server's header and every guest's copy
  bool open_trace(const std::string& path) { return tlog_.open(path); }
  void close_trace() { tlog_.close(); }
  void reset();                        // the RTL's reset, then its ports' first reading
  void run();                          // cycles until SIGTERM/SIGINT
  void stats(double secs) const;

  // ---- used by the API (control.cpp: each runs RTL cycles until its answer shows) ---------------
  struct ObjState { bool hit; unsigned state, sharers, schedFor; unsigned pend[N]; };
  struct Snapshot {
    uint64_t seq; unsigned fenced, pending, schedulable, epoch[N];
    bool live[N];
    std::map<uint32_t, ObjState> objs;
  };
  bool snapshot(const std::vector<uint32_t>& objs, Snapshot& s, std::string& err);
  // A registration (valid) or removal through io_mapUpd; true when io_mapUpdDone answered, with
  // its MapUpdCode (APTA_MAP_UPD_CODE_*) and base (schema/core.json).
  bool map_update(uint32_t obj, unsigned size, bool valid, unsigned& code, uint64_t& base, std::string& err);
  bool ctrl_and_wait(unsigned op, unsigned g, std::string& err, unsigned& epoch_out);
  // POST /v1/cancel: no put will make `version` (or a later one) of obj. 0: done; 409: that
  // version has committed (err says so); 503: io_cancel not taken (err).
  int cancel(uint32_t obj, uint64_t version, std::string& err);
  const std::string& name(unsigned g) const { return opt_.names[g]; }
  int server_by_name(const std::string& s) const {
    for (unsigned g = 0; g < N; g++)
      if (opt_.names[g] == s) return int(g);
    return -1;
  }
  const std::string& instance() const { return instance_; }
  const std::map<uint32_t, std::pair<uint64_t, unsigned>>& objects() const { return objects_; }
  uint64_t version(uint32_t o) const { auto it = versions_.find(o); return it == versions_.end() ? 0 : it->second; }
  bool live(unsigned g, uint64_t t) const { return t - guests_[g].hb_change_ns < opt_.lease_ms * 1000000ull; }
  // The API's rejoin takes from the same bucket as the guest's ring (false: 429, retry in wait_ms).
  bool rejoin_allowed(unsigned g, uint64_t& wait_ms) {
    bool ok = guests_[g].rejoin.take(opt_.rejoin_rate, opt_.rejoin_burst, now_ns(), wait_ms);
    if (!ok) guests_[g].rejoins_refused++;
    return ok;
  }

  int listen_fd = -1;
  // The API's hand-over (handover.cpp): the HTTP thread queues validated calls (at most kApiQueue,
  // else 503) and pokes api_efd; the RTL loop runs them between cycles and answers through http,
  // so a client that does not read never stalls the rings.
  static constexpr size_t kApiQueue = 64;
  std::mutex api_mu;
  std::deque<apta_api::Call> api_q;
  std::atomic<unsigned> api_pending{0};
  int api_efd = -1;
  apta_http::Server* http = nullptr;
  Tokens tokens;                       // empty: authentication off (no --token-file)

 private:
  void cycle();                                  // model.cpp
  void pull_ring(unsigned g);                    // rings.cpp
  void refuse(unsigned g, const apta_slot::Decoded& d);
  void emit(OutRing& r, const Flit& f, uint16_t refused, uint32_t seq, unsigned g, const char* what);
  void flush(OutRing& r);
  void on_rsp(const Flit& f);
  void on_snp(const Flit& f);
  void on_ctrl_resp(const Flit& f);
  void on_err();
  bool cancelled_get(unsigned g, const Flit& f);
  void trace(const char* port, const Flit& f);
  void housekeeping(uint64_t t);                 // lease.cpp
  void fence(unsigned g, const char* why);
  void watch_qemu(unsigned g);
  unsigned epoch_of(unsigned g) const;           // model.cpp
  void serve_api(uint64_t wait_ns);              // handover.cpp

  Options opt_;
  std::unique_ptr<VMemoryServer> top_;
  Region R_;
  Guest guests_[N];
  std::string instance_;

  // input ports: what is on the pins this cycle (held until the handshake)
  bool req_valid_[N] = {};
  bool ack_valid_ = false;
  unsigned ack_from_ = 0, ack_rr_ = 0;
  std::deque<Flit> ctrl_q_;
  struct MapUpd { uint32_t obj; unsigned size; bool valid; };
  std::deque<MapUpd> map_q_;
  std::deque<uint32_t> query_q_;
  bool gate_inputs_ = false;           // hold guests' inputs while the API reads a consistent snapshot

  // AXI slave state: accepted reads waiting for R; write addresses and data waiting to pair; Bs
  struct Rd { unsigned id; uint64_t addr; };
  std::deque<Rd> rd_q_;
  std::deque<Rd> aw_q_;
  struct Wd { std::array<uint8_t, LINE> data; uint64_t strb; };
  std::deque<Wd> w_q_;
  struct Bresp { unsigned id, resp; };
  std::deque<Bresp> b_q_;

  // observed outputs the API waits for
  struct MapDone { uint32_t obj; unsigned code; uint64_t base; };
  std::deque<MapDone> map_done_;
  std::deque<Flit> ctrl_resp_;
  std::deque<std::pair<uint32_t, ObjState>> query_resp_;

  std::map<uint32_t, std::pair<uint64_t, unsigned>> objects_;  // registered: obj -> (base, size)
  std::map<uint32_t, uint64_t> versions_;                       // PutCommits per object since its registration (the RTL's VersionTable)
  // POST /v1/cancel: obj -> the first version no put will make. The RTL's io_cancel answers the gets
  // held at that moment; a get naming such a version that reaches the port later (the RTL keeps no
  // record of cancellations) is answered GetCancelled here, before the RTL sees it. A commit that
  // makes the version after all (a cancel racing a last put) lifts it, as the Go control plane does.
  std::map<uint32_t, uint64_t> cancelled_;
  std::deque<uint32_t> cancel_q_;                               // io_cancel: objects to cancel
  // Objects that may have acks owed: a status query asks the directory about these and the
  // requested ones only, never every registered object, so its cost does not grow with the map.
  // Every owed ack comes from a BISnp round (a commit or an eviction) whose ObjBISnp leaves on
  // io_snp, so an object enters here when its ObjBISnp (or PutCommit) is seen and leaves when a
  // snapshot reads all its counts at 0; a snapshot checks the counts it read against
  // io_status_pendTotal (the core's per-server sums) and is retried while a round's ObjBISnp is
  // still queued in the core.
  std::set<uint32_t> maybe_pending_;
  uint64_t commit_hi_ = 0;                                      // commitSeq widened to 64 bits
  uint32_t commit_last_ = 0;
  uint64_t status_changes_ = 0;                                 // status-port changes and map updates since reset (seq)
  unsigned st_fenced_ = 0, st_pending_ = 0, st_sched_ = 0;
  unsigned fenced_last_ = 0;
  unsigned fence_queued_ = 0;                                   // Fence on io_ctrl not yet echoed
  std::deque<Flit> held_commits_;                               // --mutant commit-waits-for-acks
  uint64_t slept_ns_ = 0;
  uint64_t err_logged_ = 0;
  // --trace-log (tracelog.h): the ring index of each slot waiting in req_q / ack_q
  apta_trace::Log tlog_;
  std::deque<uint64_t> tidx_req_[N], tidx_ack_[N];
  unsigned tfenced_ = 0;

 public:
  uint64_t api_queries = 0;              // io_query issued for the API (the status queries' work)
  uint64_t api_cycles = 0;               // RTL cycles run while reading snapshots for the API
  uint64_t cycles = 0, req_fires = 0, ack_fires = 0, rsp_out = 0, snp_out = 0, axi_rd = 0, axi_wr = 0;
  uint64_t get_retries = 0, get_cancelled = 0;   // versioned gets: GetRetry (hold table full), GetCancelled
};

}  // namespace apta_memd
