// apta-memd: the host memory-server daemon of the CXL emulation (qemu-cxl/daemon/README.md).
//
// Runs the Verilated memory-server top (build/rtl/<variant>/MemoryServer.sv, rtl/MEMSERVER.md)
// one clock cycle per loop iteration and connects its ports to the rack's files (qemu-cxl/RINGS.md):
// guest g's own file (the only backing of its CXL device: control block, rings) and the daemon's
// private server file (the data area: object map and object data; no guest maps it):
//   guest g's request ring  -> io_req_<g> (ObjGet, PutPrepare, PutLine, Rejoin), io_birsp (ObjBIRsp)
//   io_rsp                  -> the response ring of the flit's server
//   io_snp                  -> the invalidation ring of the flit's server
//   AXI4 master             -> the server file's data area (single-beat reads and writes)
//   io_ctrl                 <- the failure detector (heartbeat lease) and the HTTP API
//   io_status_*, io_query   -> the control-plane API (schema/controlplane.yaml)
//   io_mapUpd/io_mapUpdDone <- POST /v1/objects ({obj, size}: the RTL allocates the storage and answers)
//   io_cancel               <- POST /v1/cancel ({object, version}: the OSC answers the object's held
//                              gets GetCancelled; later gets naming the version are answered here)
// Nothing a guest writes is trusted: a request's compute-server id is the ring it came through,
// every slot is checked with the generated codec before it reaches the RTL, and a malformed slot
// is answered with a refusal slot (RINGS.md) while the daemon carries on.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <strings.h>
#include <array>
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "VMemoryServer.h"
#include "api.h"
#include "http.h"
#include "options.h"
#include "slot.h"
#include "tracelog.h"
#include "verilated.h"
#ifdef APTA_MEMD_TRACE_PROBE
#include "VMemoryServer___024root.h"  // the core's result queue, public_flat_rd (trace.vlt)
#endif

extern "C" {
#include "apta_layout.h"
#include "apta_msg.h"
#include "apta_enums.h"  // error codes (schema/messages.json msErrors)
}

namespace {

using namespace apta_api;
using apta_memd::Options;

constexpr unsigned N = APTA_P_servers;  // compute servers of the RTL variant = guests
constexpr unsigned LINE = 64;            // bytes per AXI beat (dataBits 512)
static_assert(APTA_P_dataBits == 8 * LINE, "one cache line per AXI beat");
static_assert(APTA_FLIT_BYTES <= APTA_SLOT_FLIT_ROOM, "a flit must fit a ring slot");
static_assert(N <= APTA_MAX_GUESTS, "more servers than guest areas");

using Flit = std::array<uint8_t, APTA_FLIT_BYTES>;

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// One line per state change on stderr, with a wall-clock stamp relative to the start.
uint64_t g_t0 = now_ns();
void say(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "apta-memd %9.3f ", double(now_ns() - g_t0) / 1e9);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

// ---- Verilator wide signals <-> flit bytes (both little-endian, 32-bit words) ----------------
template <class W>
void to_wide(W& w, const uint8_t* bytes, size_t n) {
  for (size_t i = 0; i < sizeof(w) / 4; i++) w[i] = 0;
  memcpy(&w[0], bytes, n);
}
template <class W>
void from_wide(uint8_t* bytes, const W& w, size_t n) {
  memcpy(bytes, &w[0], n);
}


// ---- the rack's files (RINGS.md) ---------------------------------------------------------------
// base: the server file (header + data area, private to the daemon); guest[g]: the first
// APTA_GUEST_FILE_BYTES of guest g's file, the only memory guest g can write.
struct Region {
  uint8_t* base = nullptr;
  uint64_t bytes = 0;
  uint8_t* guest[N] = {};
  uint32_t slots = APTA_DEFAULT_SLOTS;
  uint64_t data_bytes() const { return bytes - APTA_DATA_OFFSET; }
  uint64_t ld64(unsigned g, uint64_t off) const {
    return __atomic_load_n(reinterpret_cast<const uint64_t*>(guest[g] + off), __ATOMIC_ACQUIRE);
  }
  void st64(unsigned g, uint64_t off, uint64_t v) {
    __atomic_store_n(reinterpret_cast<uint64_t*>(guest[g] + off), v, __ATOMIC_RELEASE);
  }
};

// A ring the daemon produces into (response, invalidation): the daemon keeps its own head, and a
// bounded backlog for when the guest does not consume (a dead guest must never block the RTL's
// shared rsp/snp ports, P4; what overflows the backlog is dropped, as the link drops messages to
// a crashed server).
struct OutRing {
  unsigned g = 0;                      // whose file it is in
  uint64_t off = 0, head = 0;
  uint32_t seq = 0;
  struct Slot { Flit flit; uint16_t refused; uint32_t seq; };
  std::deque<Slot> backlog;
  uint64_t dropped = 0;
};
constexpr size_t BACKLOG_MAX = 4096;

// Rejoins are rate-limited per server (issue 16, "epochs that never wrap in practice"): a token
// bucket of --rejoin-burst rejoins refilled at --rejoin-rate per second, shared by the server's ring
// and the API. Epochs are never reused (a Rejoin at the last value is refused), so what the limit
// bounds is how fast a server can spend them: its 65,535 epochs last at least 18 h at 1/s instead
// of 7 s, and a burst covers every legitimate reboot-and-rejoin sequence.
struct RejoinBucket {
  double tokens = -1;                  // < 0: not yet filled (the first use fills it to the burst)
  uint64_t last_ns = 0;
  // Takes one rejoin if the bucket has one; else false and the ms until it will.
  bool take(double rate, double burst, uint64_t now, uint64_t& wait_ms) {
    if (rate <= 0) return true;        // --rejoin-rate 0: no limit
    tokens = tokens < 0 ? burst : std::min(burst, tokens + double(now - last_ns) * rate / 1e9);
    last_ns = now;
    if (tokens >= 1) { tokens -= 1; return true; }
    wait_ms = uint64_t((1 - tokens) / rate * 1000) + 1;
    return false;
  }
};

struct Guest {
  uint64_t req_off = 0, req_tail = 0;  // request ring: the daemon is its consumer
  OutRing rsp, inv;
  std::deque<Flit> req_q;              // requests read from the ring, waiting for io_req_<g>
  std::deque<Flit> ack_q;              // ObjBIRsp read from the ring, waiting for io_birsp
  uint64_t hb_last = 0, hb_change_ns = 0;
  bool broken = false;                 // head ran away: rings ignored until head - tail <= S again
  uint64_t refusals = 0, requests = 0;
  long qemu_pid = 0;                   // the live QEMU pid last read from its pidfile (0: none)
  uint64_t pid_checked_ns = 0;
  RejoinBucket rejoin;
  bool rejoin_held = false;            // a ring Rejoin waits in the ring for the bucket (logged once)
  uint64_t rejoins_held = 0, rejoins_refused = 0;
};
constexpr size_t REQ_Q_MAX = 8;        // read-ahead of a guest's requests (acks must not wait behind them)
constexpr size_t ACK_Q_MAX = 1024;

// Bearer tokens (--token-file; issue 16), the roles of the Go control plane
// (scheduler-plugin/pkg/controlplane/auth.go): every caller with a valid token may read; fence and
// rejoin need failure-detector, POST /v1/objects object-manager. compute-server and kubelet tokens
// (bound to one server) only read here: acks and invocations are ring traffic, not API calls.
struct Caller { std::string name, role, server; };
struct Tokens {
  std::vector<std::pair<std::string, Caller>> byToken;
  bool certs = false;              // --client-ca-file: a verified client certificate names a caller too
  bool on() const { return !byToken.empty() || certs; }
  // Constant time in the token's content: every entry is compared in full.
  const Caller* find(const std::string& tok) const {
    const Caller* hit = nullptr;
    for (auto& kv : byToken) {
      unsigned diff = unsigned(kv.first.size() ^ tok.size());
      for (size_t i = 0; i < kv.first.size(); i++) diff |= uint8_t(kv.first[i]) ^ uint8_t(i < tok.size() ? tok[i] : 0);
      if (diff == 0) hit = &kv.second;
    }
    return hit;
  }
};

// token,name,role[,server] per line (kube-apiserver's --token-auth-file); # comments, blank lines.
bool load_tokens(const std::string& path, const std::vector<std::string>& servers, Tokens& t, std::string& err) {
  FILE* f = fopen(path.c_str(), "r");
  if (!f) { err = path + ": " + strerror(errno); return false; }
  char buf[4096];
  auto trim = [](std::string x) {
    x.erase(0, x.find_first_not_of(" \t\r\n"));
    x.erase(x.find_last_not_of(" \t\r\n") + 1);
    return x;
  };
  for (int line = 1; fgets(buf, sizeof buf, f); line++) {
    std::string l = trim(buf);
    if (l.empty() || l[0] == '#') continue;
    std::vector<std::string> fs;
    size_t p = 0;
    for (size_t q; (q = l.find(',', p)) != std::string::npos; p = q + 1) fs.push_back(trim(l.substr(p, q - p)));
    fs.push_back(trim(l.substr(p)));
    std::string at = path + " line " + std::to_string(line) + ": ";
    if (fs.size() < 3 || fs.size() > 4) { err = at + "want token,name,role[,server], got " + std::to_string(fs.size()) + " fields"; break; }
    Caller c{fs[1], fs[2], fs.size() == 4 ? fs[3] : ""};
    if (fs[0].size() < 16) { err = at + "token of " + c.name + " shorter than 16 bytes"; break; }
    if (c.role != "reader" && c.role != "failure-detector" && c.role != "object-manager" && c.role != "compute-server" &&
        c.role != "kubelet") {
      err = at + "unknown role \"" + c.role + "\" (want reader, failure-detector, object-manager, compute-server or kubelet)";
      break;
    }
    if (c.role == "compute-server" && c.server.empty()) { err = at + "a compute-server token must name its server"; break; }
    if (!c.server.empty() && std::find(servers.begin(), servers.end(), c.server) == servers.end()) {
      err = at + "unknown server " + c.server;
      break;
    }
    if (t.find(fs[0])) { err = at + "caller " + c.name + ": token already assigned"; break; }
    t.byToken.emplace_back(fs[0], c);
  }
  fclose(f);
  if (err.empty() && !t.on()) err = path + ": no tokens";
  return err.empty();
}

class Daemon {
 public:
  Daemon(const Options& o, VerilatedContext* ctx) : opt_(o), top_(new VMemoryServer(ctx)) {
    instance_ = "apta-memd-" + std::to_string(getpid()) + "-" + std::to_string(now_ns());
  }
  int open_region();
  void set_state(uint32_t v) {  // the server's header and every guest's copy
    apta_st32(R_.base, APTA_HDR_DAEMON_STATE, v);
    for (unsigned g = 0; g < N; g++) apta_st32(R_.guest[g], APTA_HDR_DAEMON_STATE, v);
  }
  bool open_trace(const std::string& path) { return tlog_.open(path); }
  void close_trace() { tlog_.close(); }
  void reset();
  void run();
  void stats(double secs) const;

  // ---- used by the HTTP API --------------------------------------------------------------------
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
  // POST /v1/cancel (issue 19): no put will make `version` (or a later one) of obj. 0: done; 409: that
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
  // The API's hand-over (issue 16): the HTTP thread queues validated calls (at most kApiQueue,
  // else 503) and pokes api_efd; the RTL loop runs them between cycles and answers through http.
  static constexpr size_t kApiQueue = 64;
  std::mutex api_mu;
  std::deque<Call> api_q;
  std::atomic<unsigned> api_pending{0};
  int api_efd = -1;
  apta_http::Server* http = nullptr;
  Tokens tokens;                   // empty: authentication off (no --token-file)

 private:
  void cycle();
  void pull_ring(unsigned g);
  void refuse(unsigned g, const apta_slot::Decoded& d);
  void emit(OutRing& r, const Flit& f, uint16_t refused, uint32_t seq, unsigned g, const char* what);
  void flush(OutRing& r);
  void on_rsp(const Flit& f);
  void on_snp(const Flit& f);
  void on_ctrl_resp(const Flit& f);
  void on_err();
  bool cancelled_get(unsigned g, const Flit& f);
  void trace(const char* port, const Flit& f);
  void housekeeping(uint64_t t);
  void fence(unsigned g, const char* why);
  void watch_qemu(unsigned g);
  unsigned epoch_of(unsigned g) const;
  void serve_api(uint64_t wait_ns);

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
  // Objects that may have acks owed (issue 16: a status query asks the directory about these and the
  // requested ones only, never every registered object). Every owed ack comes from a BISnp round
  // (a commit or an eviction) whose ObjBISnp leaves on io_snp, so an object enters here when its
  // ObjBISnp (or PutCommit) is seen and leaves when a snapshot reads all its counts at 0; a snapshot
  // checks the counts it read against io_status_pendTotal (the core's per-server sums) and is
  // retried while a round's ObjBISnp is still queued in the core.
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
  uint64_t get_retries = 0, get_cancelled = 0;   // issue 19's versioned gets
};

// ---- the rack's files ---------------------------------------------------------------------------
// Maps `bytes` of `path` (the whole file if bytes is 0); nullptr after saying why. `ino` gets the
// file's identity (device, inode).
uint8_t* map_file(const std::string& path, uint64_t need, uint64_t bytes, uint64_t& size,
                  std::pair<uint64_t, uint64_t>& ino) {
  int fd = open(path.c_str(), O_RDWR);
  if (fd < 0) { say("%s: %s", path.c_str(), strerror(errno)); return nullptr; }
  struct stat st;
  if (fstat(fd, &st) < 0) { say("%s: fstat: %s", path.c_str(), strerror(errno)); close(fd); return nullptr; }
  size = uint64_t(st.st_size);
  ino = {uint64_t(st.st_dev), uint64_t(st.st_ino)};
  if (size < need) {
    say("%s: %" PRIu64 " bytes, needs at least %" PRIu64, path.c_str(), size, need);
    close(fd);
    return nullptr;
  }
  void* p = mmap(nullptr, bytes ? bytes : size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) { say("%s: mmap: %s", path.c_str(), strerror(errno)); return nullptr; }
  return static_cast<uint8_t*>(p);
}

void write_header(uint8_t* b, uint32_t slots, uint64_t data_bytes, uint32_t guest) {
  memset(b, 0, APTA_HEADER_BYTES);
  memcpy(b + APTA_HDR_MAGIC, APTA_MAGIC, APTA_MAGIC_BYTES);
  apta_st32(b, APTA_HDR_VERSION, APTA_LAYOUT_VERSION);
  apta_st32(b, APTA_HDR_GUESTS, N);
  apta_st32(b, APTA_HDR_RING_SLOTS, slots);
  apta_st32(b, APTA_HDR_SLOT_BYTES, APTA_SLOT_BYTES);
  apta_st64(b, APTA_HDR_DATA_OFFSET, APTA_DATA_OFFSET);
  apta_st64(b, APTA_HDR_DATA_BYTES, data_bytes);
  apta_st32(b, APTA_HDR_GUEST, guest);
}

int Daemon::open_region() {
  uint64_t size = 0;
  std::pair<uint64_t, uint64_t> ino;
  std::map<std::pair<uint64_t, uint64_t>, std::string> seen;  // one file per party: no two the same
  R_.base = map_file(opt_.file, APTA_DATA_OFFSET + 4096, 0, size, ino);
  if (!R_.base) return -1;
  seen[ino] = opt_.file;
  R_.bytes = size;
  std::string pat = opt_.guest_file;
  if (pat.empty()) {  // the rack directory: the server file's
    size_t slash = opt_.file.rfind('/');
    pat = (slash == std::string::npos ? std::string() : opt_.file.substr(0, slash + 1)) + APTA_GUEST_FILE_FMT;
  }
  for (unsigned g = 0; g < N; g++) {
    char path[4096];
    snprintf(path, sizeof path, pat.c_str(), g);
    R_.guest[g] = map_file(path, APTA_GUEST_FILE_BYTES, APTA_GUEST_FILE_BYTES, size, ino);
    if (!R_.guest[g]) return -1;
    if (!seen.emplace(ino, path).second) {  // shared with the server or another guest: no isolation
      say("%s (guest %u) is the same file as %s: every guest needs its own file (RINGS.md)", path, g,
          seen[ino].c_str());
      return -1;
    }
  }
  uint8_t* b = R_.base;
  if (opt_.init) {
    write_header(b, opt_.slots, R_.data_bytes(), APTA_SERVER_GUEST);
    for (unsigned g = 0; g < N; g++) memset(R_.guest[g] + APTA_GUEST_AREA, 0, APTA_GUEST_AREA_BYTES);
    say("initialized %s and %u guest files (%s): %u slots, %" PRIu64 " data bytes", opt_.file.c_str(), N,
        pat.c_str(), opt_.slots, R_.data_bytes());
  } else if (memcmp(b + APTA_HDR_MAGIC, APTA_MAGIC, APTA_MAGIC_BYTES) != 0 ||
             apta_ld32(b, APTA_HDR_VERSION) != APTA_LAYOUT_VERSION || apta_ld32(b, APTA_HDR_GUESTS) != N ||
             apta_ld32(b, APTA_HDR_SLOT_BYTES) != APTA_SLOT_BYTES ||
             apta_ld64(b, APTA_HDR_DATA_OFFSET) != APTA_DATA_OFFSET || apta_ld32(b, APTA_HDR_GUEST) != APTA_SERVER_GUEST) {
    say("%s: no layout v%u server header for %u guests (use --init)", opt_.file.c_str(), APTA_LAYOUT_VERSION, N);
    return -1;
  }
  R_.slots = apta_ld32(b, APTA_HDR_RING_SLOTS);  // the server's copy: a guest's copy is never read back
  if (R_.slots == 0 || (R_.slots & (R_.slots - 1)) || R_.slots > APTA_MAX_SLOTS) {
    say("header: ring slots %u not a power of two <= %u", R_.slots, APTA_MAX_SLOTS);
    return -1;
  }
  // each guest's header copy is rewritten from the server's (a guest may have scribbled on its own)
  for (unsigned g = 0; g < N; g++) memcpy(R_.guest[g], b, APTA_HEADER_BYTES), apta_st32(R_.guest[g], APTA_HDR_GUEST, g);
  set_state(APTA_DAEMON_STARTING);
  uint64_t t = now_ns();
  for (unsigned g = 0; g < N; g++) {
    Guest& G = guests_[g];
    G.req_off = apta_ring_off(APTA_RING_REQUEST);
    G.rsp.off = apta_ring_off(APTA_RING_RESPONSE);
    G.inv.off = apta_ring_off(APTA_RING_INVALIDATION);
    G.rsp.g = G.inv.g = g;
    // Resume where the previous daemon stopped: the daemon is the only writer of these words.
    G.req_tail = R_.ld64(g, G.req_off + APTA_RING_TAIL);
    G.rsp.head = R_.ld64(g, G.rsp.off + APTA_RING_HEAD);
    G.inv.head = R_.ld64(g, G.inv.off + APTA_RING_HEAD);
    G.hb_last = R_.ld64(g, APTA_GUEST_AREA + APTA_CTL_HEARTBEAT);
    G.hb_change_ns = t;  // every guest gets one lease from the daemon's start
  }
  return 0;
}

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

// ---- rings --------------------------------------------------------------------------------------
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

// ---- RTL outputs --------------------------------------------------------------------------------
// The server field every M->C flit carries after its opcode.
unsigned server_of(const Flit& f) { return unsigned(apta_bits_get(f.data(), APTA_OPCODE_BITS, APTA_P_serverBits)); }

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

// ---- liveness, daemon heartbeat, fence/rejoin log ------------------------------------------------
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

// ---- synchronous helpers for the API: run cycles until the answer shows -----------------------------
bool Daemon::map_update(uint32_t obj, unsigned size, bool valid, unsigned& code, uint64_t& base, std::string& err) {
  map_done_.clear();
  map_q_.push_back({obj, size, valid});
  for (int i = 0; i < 100000; i++) {
    cycle();
    for (const MapDone& d : map_done_)
      if (d.obj == obj) {
        code = d.code, base = d.base;
        if (code != APTA_MAP_UPD_CODE_OK) {
          say("object %u %s refused: %s", obj, valid ? "registration" : "removal", APTA_MAP_UPD_CODE_NAME[code]);
          return true;
        }
        if (valid) objects_[obj] = {base, size};
        else objects_.erase(obj);
        versions_.erase(obj);          // the RTL's version of the object restarts at 0 (VersionTable)
        cancelled_.erase(obj);
        if (tlog_.on())
          tlog_.reg(obj, base, size, valid, valid && base + 64ull * size <= R_.data_bytes() ? R_.base + APTA_DATA_OFFSET + base : nullptr);
        status_changes_++;             // a state change of the API (unknown <-> known): seq advances
        say("object %u %s (base %" PRIu64 ", %u lines)", obj, valid ? "registered" : "removed, its extent freed", base,
            valid ? size : 0u);
        return true;
      }
  }
  err = "map update not answered";
  return false;
}

bool Daemon::ctrl_and_wait(unsigned op, unsigned g, std::string& err, unsigned& epoch_out) {
  ctrl_resp_.clear();
  Flit f;
  if (op == APTA_OP_Fence) {
    if ((top_->io_status_fenced >> g) & 1u) { epoch_out = epoch_of(g); return true; }
    apta_Fence m{g, epoch_of(g)};
    apta_pack_Fence(f.data(), &m);
    say("fence: guest %u epoch %u (control plane)", g, m.epoch);
  } else {
    apta_Rejoin m{g, epoch_of(g)};
    apta_pack_Rejoin(f.data(), &m);
  }
  ctrl_q_.push_back(f);
  for (int i = 0; i < 100000; i++) {
    cycle();
    for (const Flit& r : ctrl_resp_)
      if (apta_bits_get(r.data(), APTA_OPCODE_BITS, APTA_P_serverBits) == g) {
        epoch_out = epoch_of(g);
        if (apta_opcode(r.data()) == APTA_OP_RejoinRefused) {
          err = "epochs exhausted: the server is at its last epoch " + std::to_string(epoch_out) +
                " (epochs are never reused) and stays fenced until the memory server is reset";
          return false;
        }
        return true;
      }
  }
  err = "no answer on ctrlResp";
  return false;
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

int Daemon::cancel(uint32_t obj, uint64_t v, std::string& err) {
  if (version(obj) >= v) {
    err = "version " + std::to_string(v) + " of object " + std::to_string(obj) + " is already committed (" +
          std::to_string(version(obj)) + ")";
    return 409;
  }
  auto c = cancelled_.find(obj);
  if (c == cancelled_.end() || v < c->second) cancelled_[obj] = v;
  // every held get of obj is for a version not committed (a woken one has left the table)
  cancel_q_.push_back(obj);
  for (int i = 0; i < 100000 && !cancel_q_.empty(); i++) cycle();
  if (!cancel_q_.empty()) { err = "io_cancel not taken"; return 503; }
  status_changes_++;                   // a state change of the API: seq advances
  say("cancel: object %u from version %" PRIu64 " on (held gets answered GetCancelled)", obj, v);
  return 0;
}

// One instant: guests' inputs are held back while every object is queried, and the reads are
// repeated if a commit or fence still happened meanwhile (internal progress of the OPC or core).
bool Daemon::snapshot(const std::vector<uint32_t>& want, Snapshot& s, std::string& err) {
  gate_inputs_ = true;
  bool ok = false;
  for (int attempt = 0; attempt < 64 && !ok; attempt++) {
    // the requested objects and those that may owe acks: never a walk of every registered object
    std::set<uint32_t> objs(want.begin(), want.end());
    objs.insert(maybe_pending_.begin(), maybe_pending_.end());
    VMemoryServer& t = *top_;
    uint32_t c0 = t.io_status_commitSeq;
    unsigned f0 = t.io_status_fenced, p0 = t.io_status_pending;
    query_resp_.clear();
    s.objs.clear();
    for (uint32_t o : objs) query_q_.push_back(o);
    api_queries += objs.size();
    for (int i = 0; i < 100000 && s.objs.size() < objs.size(); i++) {
      cycle();
      api_cycles++;
      for (auto& qr : query_resp_) s.objs[qr.first] = qr.second;
      query_resp_.clear();
    }
    if (s.objs.size() < objs.size()) { err = "query not answered"; break; }
    ok = t.io_status_commitSeq == c0 && t.io_status_fenced == f0 && t.io_status_pending == p0;
    // complete: the counts read add up to the core's per-server totals (else a round's ObjBISnp is
    // still queued: the cycles of the next attempt let it out)
    unsigned total[N] = {};
#define X(i) total[i] = t.io_status_pendTotal_##i;
    APTA_FOR_EACH_SERVER(X)
#undef X
    for (unsigned g = 0; g < N && ok; g++) {
      uint64_t sum = 0;
      for (auto& kv : s.objs) sum += kv.second.pend[g];
      ok = sum == total[g];
    }
    if (ok) {
      if (t.io_status_commitSeq < commit_last_) commit_hi_ += 1ull << 32;
      commit_last_ = t.io_status_commitSeq;
      s.seq = (commit_hi_ | commit_last_) + status_changes_;  // commits + other state changes: monotonic
      s.fenced = f0;
      s.pending = p0;
      s.schedulable = t.io_status_schedulable;
      uint64_t now = now_ns();
      for (unsigned g = 0; g < N; g++) { s.epoch[g] = epoch_of(g); s.live[g] = live(g, now); }
      for (auto& kv : s.objs) {       // settled objects leave the set
        bool owed = false;
        for (unsigned g = 0; g < N; g++) owed = owed || kv.second.pend[g];
        if (!owed) maybe_pending_.erase(kv.first);
      }
    }
  }
  gate_inputs_ = false;
  if (!ok && err.empty()) err = "state kept changing";
  return ok;
}

// ---- HTTP ---------------------------------------------------------------------------------------
std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (uint8_t(c) < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); o += b; continue; }
    o += c;
  }
  return o + "\"";
}

using apta_http::Reply;

std::string names_json(const std::vector<std::string>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); i++) o += (i ? "," : "") + json_str(v[i]);
  return o + "]";
}

Reply api_schedulable(Daemon& d, const std::string& query) {
  std::vector<uint32_t> req;
  std::vector<std::string> req_names;
  std::string err;
  if (!parse_objects_query(query, req, req_names, err)) return error_reply(400, err);
  Daemon::Snapshot s;
  if (!d.snapshot(req, s, err)) return error_reply(503, err);
  std::vector<std::string> unknown;
  for (size_t i = 0; i < req.size(); i++)
    if (!d.objects().count(req[i])) unknown.push_back(req_names[i]);
  std::string o = "{\"seq\":" + std::to_string(s.seq) + ",\"instance\":" + json_str(d.instance());
  if (!req.empty()) o += ",\"objects\":" + names_json(req_names) + ",\"unknown\":" + names_json(unknown);
  o += ",\"servers\":[";
  for (unsigned g = 0; g < N; g++) {
    bool fenced = (s.fenced >> g) & 1u;
    uint64_t pending = 0;
    std::vector<std::string> pobj, caches;
    std::string pfor;
    for (auto& kv : s.objs)
      if (kv.second.pend[g]) { pending += kv.second.pend[g]; pobj.push_back(std::to_string(kv.first)); }
    // s.objs holds every object owing acks (snapshot: the counts add up to io_status_pendTotal),
    // so this sum is the core's total; the bitmap stays authoritative all the same
    if (((s.pending >> g) & 1u) && pending == 0) pending = 1;
    bool sched_for = s.live[g] && !fenced;
    for (size_t i = 0; i < req.size(); i++) {
      const Daemon::ObjState& st = s.objs[req[i]];
      if (st.pend[g]) pfor += std::string(pfor.empty() ? "" : ",") + json_str(req_names[i]) + ":" + std::to_string(st.pend[g]);
      if ((st.sharers >> g) & 1u) caches.push_back(req_names[i]);
      if (!((st.schedFor >> g) & 1u)) sched_for = false;
    }
    bool sched = s.live[g] && ((s.schedulable >> g) & 1u);
    if (req.empty()) sched_for = sched;
    bool trunc = pobj.size() > 64;
    if (trunc) pobj.resize(64);
    o += std::string(g ? "," : "") + "{\"name\":" + json_str(d.name(g)) + ",\"live\":" + (s.live[g] ? "true" : "false") +
         ",\"fenced\":" + (fenced ? "true" : "false") + ",\"epoch\":" + std::to_string(s.epoch[g]) +
         ",\"pending\":" + std::to_string(pending) + ",\"pendingFor\":{" + pfor + "}" +
         ",\"pendingObjects\":" + names_json(pobj) + ",\"pendingObjectsTruncated\":" + (trunc ? "true" : "false") +
         ",\"caches\":" + names_json(caches) + ",\"schedulable\":" + (sched ? "true" : "false") +
         ",\"schedulableFor\":" + (sched_for ? "true" : "false") + "}";
  }
  return {200, o + "]}"};
}

Reply api_object(Daemon& d, const std::string& name) {
  uint32_t o;
  if (!parse_obj(name, o)) return error_reply(400, "object names are decimal object ids");
  if (!d.objects().count(o)) return error_reply(404, "unknown object " + name);
  Daemon::Snapshot s;
  std::string err;
  if (!d.snapshot({o}, s, err)) return error_reply(503, err);
  const Daemon::ObjState& st = s.objs[o];
  std::vector<std::string> sh;
  std::string pend;
  for (unsigned g = 0; g < N; g++) {
    if ((st.sharers >> g) & 1u) sh.push_back(d.name(g));
    if (st.pend[g]) pend += std::string(pend.empty() ? "" : ",") + json_str(d.name(g)) + ":" + std::to_string(st.pend[g]);
  }
  return {200, "{\"seq\":" + std::to_string(s.seq) + ",\"instance\":" + json_str(d.instance()) +
                   ",\"object\":" + json_str(name) + ",\"version\":" + std::to_string(d.version(o)) +
                   ",\"sharers\":" + names_json(sh) + ",\"pending\":{" + pend + "}}"};
}

// The answer to each MapUpdCode (schema/core.json; controlplane.yaml registerObject): the HTTP status,
// the request field it is about, and what to say.
struct MapRefusal { int http; const char* field; std::string why; };
MapRefusal map_refusal(unsigned code) {
  switch (code) {
    case APTA_MAP_UPD_CODE_BADSIZE: return {400, "size", "size must be 1.." + std::to_string(APTA_P_linesPerObject) + " lines"};
    case APTA_MAP_UPD_CODE_EXISTS: return {409, "obj", "object already registered (remove it first)"};
    case APTA_MAP_UPD_CODE_COLLISION: return {409, "obj", "the object's map slot (obj modulo the map's entries) holds another object"};
    case APTA_MAP_UPD_CODE_NOSPACE: return {507, "size", "no storage left for an object of this size"};
    case APTA_MAP_UPD_CODE_UNKNOWNOBJ: return {404, "obj", "object not registered"};
    case APTA_MAP_UPD_CODE_BUSY: return {409, "obj", "copies of the object are outstanding (sharers, owed acks, or a get or put in flight)"};
    case APTA_MAP_UPD_CODE_BADENTRY: return {409, "obj", "the object's map entry does not describe storage of the allocator"};
  }
  return {500, "obj", "unknown map answer"};
}

Reply api_post_object(Daemon& d, const Call& c) {
  std::string err;
  unsigned code = 0;
  uint64_t base = 0;
  // api.cpp checked the port widths; the RTL checks everything else and answers with a MapUpdCode
  if (!d.map_update(uint32_t(c.obj), unsigned(c.size), c.valid != 0, code, base, err)) return error_reply(503, err);
  if (code != APTA_MAP_UPD_CODE_OK) {
    MapRefusal r = map_refusal(code);
    return {r.http, "{\"error\":" + json_str(std::string(c.valid ? "registration" : "removal") + " of object " +
                                               std::to_string(c.obj) + " refused: " + r.why) +
                        ",\"field\":" + json_str(r.field) + ",\"code\":" + json_str(APTA_MAP_UPD_CODE_NAME[code]) + "}"};
  }
  Daemon::Snapshot s;
  if (!d.snapshot({}, s, err)) return error_reply(503, err);
  std::string o = "{\"seq\":" + std::to_string(s.seq) + ",\"instance\":" + json_str(d.instance()) +
                  ",\"object\":" + json_str(std::to_string(c.obj)) + ",\"base\":" + std::to_string(base);
  if (c.valid) o += ",\"size\":" + std::to_string(c.size);
  return {200, o + "}"};
}

Reply api_cancel(Daemon& d, const Call& c) {
  std::string err;
  int code = d.cancel(uint32_t(c.obj), c.version, err);
  if (code == 409) return {409, "{\"error\":" + json_str(err) + ",\"field\":\"version\"}"};
  if (code) return error_reply(code, err);
  Daemon::Snapshot s;
  if (!d.snapshot({}, s, err)) return error_reply(503, err);
  return {200, "{\"seq\":" + std::to_string(s.seq) + ",\"instance\":" + json_str(d.instance()) + "}"};   // ChangeAnswer
}

Reply api_ctrl(Daemon& d, const std::string& server, bool fence) {
  int g = d.server_by_name(server);
  if (g < 0) return error_reply(400, "unknown server " + server);
  std::string err;
  unsigned e;
  uint64_t wait_ms = 0;
  if (!fence && !d.rejoin_allowed(unsigned(g), wait_ms))
    return {429, "{\"error\":" + json_str("rejoins of " + server + " over the rate limit: retry in " +
                                            std::to_string(wait_ms) + " ms") + ",\"field\":\"server\"}",
            "Retry-After: " + std::to_string((wait_ms + 999) / 1000) + "\r\n"};
  if (!d.ctrl_and_wait(fence ? APTA_OP_Fence : APTA_OP_Rejoin, unsigned(g), err, e))
    return error_reply(err.rfind("epochs exhausted", 0) == 0 ? 400 : 503, err);   // 400: a refused request
  Daemon::Snapshot s;
  if (!d.snapshot({}, s, err)) return error_reply(503, err);
  return {200, "{\"seq\":" + std::to_string(s.seq) + ",\"instance\":" + json_str(d.instance()) +
                   ",\"server\":" + json_str(server) + ",\"epoch\":" + std::to_string(e) + "}"};
}

// The HTTP server's handler (its thread): immediate answer, or the call queued for the RTL loop.
bool enqueue(Daemon& d, uint64_t id, apta_http::Request& q, Reply& rep) {
  Call c;
  if (d.tokens.on()) {            // 401 before anything else: an unauthenticated caller learns nothing
    const std::string& h = q.authorization;
    const Caller* who = nullptr;
    Caller by_cert;
    if (h.size() > 7 && strncasecmp(h.c_str(), "Bearer ", 7) == 0) who = d.tokens.find(h.substr(7));
    else if (h.empty() && d.tokens.certs && !q.cert_name.empty()) {
      // a verified client certificate (http.h): CN = caller, O = role, no server binding (the
      // roles bound to a server only read here)
      by_cert = {q.cert_name, q.cert_role, ""};
      who = &by_cert;
      static const char* const kRoles[] = {"reader", "failure-detector", "object-manager", "compute-server", "kubelet"};
      if (std::find(std::begin(kRoles), std::end(kRoles), by_cert.role) == std::end(kRoles)) {
        rep = error_reply(403, "client certificate of " + by_cert.name + ": organization (O) \"" + by_cert.role +
                                   "\" is no role (want reader, failure-detector, object-manager, compute-server or kubelet)");
        return true;
      }
    }
    if (!who) {
      rep = error_reply(401, d.tokens.certs ? "missing or invalid bearer token or client certificate"
                                            : "missing or invalid bearer token");
      rep.headers = "WWW-Authenticate: Bearer realm=\"apta-memd\"\r\n";
      return true;
    }
    if (!classify(q, c, rep)) return true;
    const char* need = c.kind == Call::PostObject || c.kind == Call::Cancel ? "object-manager"
                       : c.kind == Call::Ctrl ? "failure-detector" : nullptr;
    if (need && who->role != need) {
      rep = error_reply(403, "caller " + who->name + " (role " + who->role + ") may not do this: role " + need + " required");
      return true;
    }
  } else if (!classify(q, c, rep)) {
    return true;
  }
  c.id = id;
  {
    std::lock_guard<std::mutex> g(d.api_mu);
    if (d.api_q.size() >= Daemon::kApiQueue) { rep = error_reply(503, "API busy: the RTL loop's queue is full"); return true; }
    d.api_q.push_back(std::move(c));
    d.api_pending++;
  }
  uint64_t one = 1;
  (void)!write(d.api_efd, &one, sizeof one);
  return false;
}

// On the RTL loop's thread.
Reply execute(Daemon& d, const Call& c) {
  switch (c.kind) {
    case Call::Schedulable: return api_schedulable(d, c.arg);
    case Call::Object: return api_object(d, c.arg);
    case Call::PostObject: return api_post_object(d, c);
    case Call::Ctrl: return api_ctrl(d, c.arg, c.fence);
    case Call::Cancel: return api_cancel(d, c);
  }
  return error_reply(500, "unknown call");
}

int listen_on(int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || listen(s, 512) < 0) {
    close(s);
    return -1;
  }
  return s;
}

// The RTL loop's side of the API: waits up to `wait_ns` for a queued call (the idle loop's sleep),
// then runs at most 8 queued calls (each a few RTL cycles) and hands their answers to the HTTP
// thread. Sockets are never touched here: a client that does not read costs the loop nothing.
void Daemon::serve_api(uint64_t wait_ns) {
  if (api_efd < 0) {
    if (wait_ns) { timespec ts{0, long(wait_ns)}; nanosleep(&ts, nullptr); }
    return;
  }
  if (wait_ns && api_pending == 0) {
    pollfd p{api_efd, POLLIN, 0};
    timespec ts{0, long(wait_ns)};
    ppoll(&p, 1, &ts, nullptr);
  }
  if (api_pending == 0) return;
  uint64_t v;
  (void)!read(api_efd, &v, sizeof v);
  for (int i = 0; i < 8; i++) {
    Call c;
    {
      std::lock_guard<std::mutex> g(api_mu);
      if (api_q.empty()) break;
      c = std::move(api_q.front());
      api_q.pop_front();
      api_pending--;
    }
    http->complete(c.id, execute(*this, c));
  }
}

// ---- the main loop -----------------------------------------------------------------------------
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


}  // namespace

namespace apta_memd {

// The deliberate bugs for negative controls, schema/mutants.json's daemon layer:
//   --mutant commit-waits-for-acks  a PutCommit is held while another server owes an ack
bool set_mutant(const std::string& a, const std::string& m, Options& o) {
  if (a == "--mutant" && m == "commit-waits-for-acks") return o.mutant_commit_waits = true;
  return false;
}

}  // namespace apta_memd

int main(int argc, char** argv) {
  Options o;
  if (int rc = apta_memd::parse_options(argc, argv, N, o); rc >= 0) return rc;

  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);
  auto ctx = std::make_unique<VerilatedContext>();
  ctx->commandArgs(1, argv);
  Daemon d(o, ctx.get());
  if (!o.token_file.empty()) {
    std::string err;
    if (!load_tokens(o.token_file, o.names, d.tokens, err)) { fprintf(stderr, "apta-memd: --token-file %s\n", err.c_str()); return 2; }
    say("API authentication on: %zu tokens", d.tokens.byToken.size());
  }
  std::shared_ptr<apta_http::Tls> tls;
  if (!o.tls.cert.empty() || !o.tls.key.empty() || !o.tls.client_ca.empty()) {
    std::string err;
    if (!(tls = apta_http::Tls::load(o.tls, err))) { fprintf(stderr, "apta-memd: %s\n", err.c_str()); return 2; }
    d.tokens.certs = tls->client_certs();
    say("API over TLS: %s%s", o.tls.cert.c_str(), tls->client_certs() ? ", client certificates of the CA in --client-ca-file" : "");
  }
  if (d.open_region() < 0) return 1;
  if (!o.trace_log.empty()) {
    if (!d.open_trace(o.trace_log)) { fprintf(stderr, "apta-memd: --trace-log %s: %s\n", o.trace_log.c_str(), strerror(errno)); return 1; }
  }
  if (o.port > 0 && (d.listen_fd = listen_on(o.port)) < 0) {
    fprintf(stderr, "apta-memd: cannot listen on 127.0.0.1:%d: %s\n", o.port, strerror(errno));
    return 1;
  }
  d.reset();
  std::unique_ptr<apta_http::Server> http;
  if (d.listen_fd >= 0) {
    d.api_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    http = std::make_unique<apta_http::Server>(d.listen_fd, apta_http::Limits{},
                                               [&d](uint64_t id, apta_http::Request& q, Reply& r) { return enqueue(d, id, q, r); }, tls);
    d.http = http.get();
    http->start();
  }
  uint64_t t0 = now_ns();
  d.run();
  if (http) http->stop();
  d.close_trace();
  double secs = double(now_ns() - t0) / 1e9;
  say("stopped");
  if (o.stats) d.stats(secs);
  return 0;
}
