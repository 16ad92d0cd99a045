// The simulated system, once for both simulators: the workflow's instances (GET -> COMPUTE ->
// PUT), the seven configurations' get and put protocols (§IV-A), the ordered point-to-point
// links, the memory server's protocol engine (directory.hpp), the object caches' versions, the
// scheduler with the pending-invalidation rule, and compute-server failures with fencing.
//
// What differs between simulators is behind `Backend`: time and events, the compute servers'
// replay of a trace phase through their caches, the memory server's DRAM, and where a fetched
// object lands. apta-sim (sim.cpp) implements it analytically (fixed-latency LRU caches, a
// bandwidth-server DRAM); the gem5 extension (gem5/) with gem5's caches and DDR4 controller. So a
// difference between the two simulators comes from those models, never from the protocol.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "directory.hpp"
#include "model.hpp"
#include "trace.hpp"

namespace apta {

// A trace's object slot (TraceInstance::objects) -> the object and version it holds in this run.
struct Slots {
  std::vector<uint32_t> obj, ver;
};

// How a jittered link draws its latency (sim/README.md "Links"). Message: every message's latency
// is drawn independently. Operation: one draw per store operation (a get, a put, a version check,
// an invalidation with its ack), shared by all of its messages. Correlated: per channel, the draw
// follows a stationary Gaussian (Ornstein-Uhlenbeck) process in time with correlation time tau:
// z' = a z + sqrt(1 - a^2) e, a = exp(-dt / tau), dt between the two messages' departures.
// In every mode the latency is max(0, lat (1 + cv z)) with z ~ N(0, 1) marginally.
enum class JitterMode { Message, Operation, Correlated };

// What the jitter did in a run (all channels): the drawn latencies relative to the mean, and their
// lag-1 correlation between consecutive messages on one channel.
struct JitterStats {
  uint64_t messages = 0, draws = 0, pairs = 0;
  double s = 0, s2 = 0;                          // sum of l/lat, of (l/lat)^2
  double px = 0, py = 0, pxx = 0, pyy = 0, pxy = 0;  // consecutive pairs (previous, this) on a channel
};

// One direction of a point-to-point link: serialization at the bandwidth, then the latency
// (optionally jittered); arrivals stay in send order (ordered links).
struct Link {
  double gbps = 1, lat = 0, cv = 0;
  double free_at = 0, last_arrival = 0;
  std::mt19937_64* rng = nullptr;
  JitterMode mode = JitterMode::Message;
  double tau_ns = 0;            // Correlated: correlation time
  JitterStats* stats = nullptr;
  double z_prev = 0, t_prev = -1, r_prev = 0;  // Correlated: the last draw and its departure; the last l/lat
  uint64_t jittered = 0;                       // messages jittered on this channel so far
  // z: the operation's draw (Operation mode); NaN = draw here
  double send(double t, double bytes, double min_end = 0, double z = std::numeric_limits<double>::quiet_NaN()) {
    double start = std::max(t, free_at);
    free_at = std::max(start + bytes * 8.0 / gbps, min_end);
    double l = lat;
    if (rng && cv > 0) {
      if (mode == JitterMode::Message || std::isnan(z)) {
        std::normal_distribution<double> nd(0.0, 1.0);
        double e = nd(*rng);
        if (stats) ++stats->draws;
        if (mode == JitterMode::Correlated && t_prev >= 0) {
          double a = std::exp(-(free_at - t_prev) / tau_ns);
          e = a * z_prev + std::sqrt(1 - a * a) * e;
        }
        z = e;
      }
      z_prev = z; t_prev = free_at;
      l = std::max(0.0, lat * (1.0 + cv * z));
      if (stats && lat > 0) {
        double r = l / lat;
        ++stats->messages; stats->s += r; stats->s2 += r * r;
        if (jittered++ > 0) {
          ++stats->pairs; stats->px += r_prev; stats->py += r; stats->pxx += r_prev * r_prev; stats->pyy += r * r; stats->pxy += r_prev * r;
        }
        r_prev = r;
      }
    }
    double arr = std::max(free_at + l, last_arrival);
    last_arrival = arr;
    return arr;
  }
};

// The identity of a line in a compute server's caches: a line of an instance's own memory (each
// instance is its own process, with its own address space) or line `line` of object obj in
// version ver (a server's LLC keeps objects across functions; a new version is a new line).
inline uint64_t local_line_key(int inst, uint64_t line) { return (uint64_t(inst + 1) << 42) | line; }
inline uint64_t object_line_key(uint32_t obj, uint32_t ver, uint64_t line) {
  return (1ull << 63) | (uint64_t(obj) << 44) | (uint64_t(ver & 0xFFFF) << 28) | (line & 0xFFFFFFF);
}

// What a message between a compute server and the memory server is, for a backend that puts it
// on a link of CXL's channels (Backend::link_message): Request (M2S Req), Data (M2S RwD or S2M
// DRS), Ack (S2M NDR), Snoop (S2M BISnp), SnoopAck (M2S BIRsp).
enum class MsgKind { Request, Data, Ack, Snoop, SnoopAck };

// Backend::ms_dram's object for the lines of the CXL configurations' redo log (not an object's).
constexpr uint32_t kRedoLog = 0xFFFFFFFFu;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual double now() const = 0;                              // ns
  virtual void at(double t, std::function<void()> fn) = 0;    // run fn at max(t, now)
  // Replay phase `ph` of instance i's trace on compute server s: its ops at the CPI, its lines
  // through s's caches. done(ns) runs when the phase has finished, with its duration.
  virtual void compute(int i, int s, Phase ph, const Slots& slots, std::function<void(double)> done) = 0;
  // Lines [first_line, first_line + lines) of object obj read or written in the memory server's
  // DRAM, issued no earlier than t. done(first, last) gets when the first and the last line are
  // through (it may run at once, with times in the future, or later); a null done is not waited
  // for (a drain).
  virtual void ms_dram(double t, uint32_t obj, uint64_t first_line, uint64_t lines, bool write,
                       std::function<void(double, double)> done) = 0;
  // Object obj in version ver (`lines` lines, no more than the LLC holds) has arrived at compute
  // server s: it lands in the LLC.
  virtual void install(int s, uint32_t obj, uint32_t ver, uint64_t lines) = 0;
  // A message of `flits` flits (kind k) over compute server s's DM link (up: to the memory
  // server), sent no earlier than not_before and not finished before min_end; fn runs on its
  // arrival. false: the backend has no link model of its own (apta-sim), System times it on its
  // analytical links.
  virtual bool link_message(int s, bool up, MsgKind k, uint64_t flits, double not_before, double min_end,
                            std::function<void()> fn) {
    (void)s; (void)up; (void)k; (void)flits; (void)not_before; (void)min_end; (void)fn;
    return false;
  }
  // The next Data message down to compute server s carries object obj in version ver (`lines`
  // lines, no more than the LLC holds), which install() then reports: a backend whose link
  // delivers data as it streams in may write the lines into the LLC as they arrive.
  virtual void data_arriving(int s, uint32_t obj, uint32_t ver, uint64_t lines) {
    (void)s; (void)obj; (void)ver; (void)lines;
  }
  // Compute server s's copy of object obj (version ver, `lines` lines) leaves its caches, as the
  // invalidation handler's flushes do; done() when they are through. false: no caches to flush
  // (apta-sim: the object cache's entry is all there is).
  virtual bool flush_copy(int s, uint32_t obj, uint32_t ver, uint64_t lines, std::function<void()> done) {
    (void)s; (void)obj; (void)ver; (void)lines; (void)done;
    return false;
  }
  // The CXL configurations on a backend with a packet-level CXL link (gem5): in CXL cached a
  // function's loads and stores to object lines cross the link themselves (a get moves no data);
  // in CXL uncached a get is the backend's line reads (cxl_read_lines) into a local copy; a logged
  // put's line writes are the backend's, and a back-invalidation is the memory server's snoops of
  // a sharer's caches. apta-sim (false) times all of them as messages over its analytical links.
  virtual bool cxl_packets() const { return false; }
  // Compute server s writes lines [first_line, first_line + n) of object obj (or kRedoLog) in
  // version ver through to the memory server over its link; done() when the last completion is
  // back (never if s dies first).
  virtual void cxl_write_lines(int s, uint32_t obj, uint32_t ver, uint64_t first_line, uint64_t n,
                               std::function<void()> done) {
    (void)s; (void)obj; (void)ver; (void)first_line; (void)n; (void)done;
  }
  // Compute server s reads the n lines of object obj (version ver) from the memory server over
  // its link, uncached, at most an MSHR-full in flight; done() when the last has arrived (never
  // if s dies first). The lines then land in the LLC by install().
  virtual void cxl_read_lines(int s, uint32_t obj, uint32_t ver, uint64_t n, std::function<void()> done) {
    (void)s; (void)obj; (void)ver; (void)n; (void)done;
  }
  // The memory server back-invalidates the n lines of object obj in compute server x's caches
  // (a BISnp per line over x's link, dirty lines written back); done() when every BIRsp is back.
  virtual void cxl_back_invalidate(int x, uint32_t obj, uint64_t n, std::function<void()> done) {
    (void)x; (void)obj; (void)n; (void)done;
  }
  // CXL cached on a backend without a link of its own: the backend's replay hands the lines of
  // the CXL window an event misses to this, which sends them as line reads over server s's link
  // (System::line_stream); done() when the last has arrived (never if s dies first).
  std::function<void(int s, uint64_t lines, std::function<void()> done)> window_fetch;
  // Compute server s has died: whatever it was replaying stops.
  virtual void failed(int s) { (void)s; }
  // Every instance has finished (gem5 leaves its event loop here; apta-sim's queue just drains).
  virtual void finished() {}
};

class System {
 public:
  System(const Plan& plan, Params p, Config c, Scenario s, Backend& b);
  void start();                   // schedule the failures and the first placements
  RunResult& finish();            // after the event loop: completion, totals
  RunResult& result() { return R; }
  const Params& params() const { return P; }

 private:
  struct Server {
    bool alive = true;
    int running = -1;
    uint32_t epoch = 0;
    std::map<int, uint32_t> held;  // object cache: object id -> version of the copy held
    Link up, down;
  };
  struct Run {
    int state = 0;  // 0 waiting, 1 running, 2 done
    int server = -1;
    uint64_t gen = 0;
    double t0 = 0;
    size_t k = 0;
    bool any_hit = false, any_inv = false;
    Slots slots;
    double ready_at = -1;   // when its invocation path ends (-1: not yet triggered)
    bool put_wait = false;  // dataflow: computed, its puts wait for its predecessors to finish
    bool restarting = false;  // died with its server, waits for its re-execution
  };
  // Dataflow (Config::early): a versioned get waiting at the OSC for its version to commit
  struct Hold {
    int s, obj;
    uint32_t need;
    uint64_t n;
    std::shared_ptr<uint32_t> vp;
    std::function<void()> done;
    double z, t0;
  };
  struct Stream;

  const Plan& plan_;
  Params P;
  Config C;
  Scenario S;
  Backend& B;
  std::mt19937_64 rng_;
  JitterStats jstats_;
  std::vector<Server> sv_;
  std::unique_ptr<Directory> dir_;
  std::vector<uint32_t> version_, next_version_;
  // dataflow: per object, its commits so far and the commit rank of each version token (a get
  // names a commit count, the model's version: spec/murphi/README.md); per instance, whether it
  // is invoked early and, per read, the commits it needs; the OSC's hold table
  std::vector<uint32_t> commits_;
  std::vector<std::map<uint32_t, uint32_t>> rank_;
  std::vector<std::map<uint32_t, int>> writer_;   // per object: version token -> the instance that committed it
  std::vector<std::vector<bool>> anc_;            // anc_[i][j]: j is an ancestor of i
  std::vector<bool> early_;
  std::vector<std::vector<uint32_t>> need_;
  std::vector<Hold> holds_;
  std::vector<uint64_t> sync_sharers_;
  std::vector<Run> runs_;
  bool scheduling_ = false, finished_ = false;
  RunResult R;

  double now() const { return B.now(); }
  void at(double t, std::function<void()> f) { B.at(t, std::move(f)); }
  double ms_ns(double cycles) const { return cycles / P.ms_clock_ghz; }
  uint64_t lines_of(int obj) const;
  bool fits_llc(uint64_t lines) const { return lines * P.line <= P.l2_bytes; }  // a copy the LLC can hold
  void msg(int s, bool up, double bytes, std::function<void()> fn, double not_before = 0, double min_end = 0,
           double z = std::numeric_limits<double>::quiet_NaN(), const MsgKind* kind = nullptr);
  double op_z();  // the latency draw of a new store operation (Operation jitter mode), else NaN
  std::function<void()> sw_done(double t0, std::function<void()> cb);
  bool live(int i, uint64_t gen) const;
  void install(int s, int obj, uint32_t ver, bool cache);
  void set_slots(int i, int obj, const char* kind, uint32_t ver);

  void begin(int i, int s);
  void get_next(int i, uint64_t gen);
  void put_next(int i, uint64_t gen);
  void start_put(int i, uint64_t gen);
  void do_get(int i, uint64_t gen, int s, int obj, uint32_t need, std::function<void(bool, uint32_t)> cb);
  void fetch(int i, uint64_t gen, int s, int obj, uint32_t need, std::function<void(uint32_t)> cb);
  void serve(int s, int obj, uint64_t n, std::shared_ptr<uint32_t> vp, std::function<void()> done, double z, uint32_t need = 0);
  uint32_t rank(int obj, uint32_t ver) const;
  void release(int obj);
  void drop_holds(int s);
  void line_stream(int s, int obj, uint64_t n, bool write, bool dir, std::function<void()> cb, double z);
  void put_lines(int s, int obj, uint32_t ver, uint64_t n, bool dir, std::function<void()> cb, double z);
  void issue(const std::shared_ptr<Stream>& st);
  void do_put(int i, uint64_t gen, int s, int obj, uint32_t ver, std::function<void(bool)> cb);
  void commit(int s, int obj, uint32_t ver, uint64_t n, std::shared_ptr<bool> inv, std::function<void()> done, double z);
  void send_inval(const Snp& sn);
  void logged_put(int i, uint64_t gen, int s, int obj, uint32_t ver, uint64_t n, size_t stage, bool inv,
                  std::function<void(bool)> cb, double z);
  void sync_invalidate(int w, int x, int obj, uint64_t n, std::shared_ptr<int> pending,
                       std::shared_ptr<std::function<void()>> join, double z);
  bool deps_done(int i) const;
  bool triggered(int i) const;
  bool placeable(int s, int i) const;
  int preempt_for(int i);
  void schedule();
  void fail_server(int s);
};

}  // namespace apta
