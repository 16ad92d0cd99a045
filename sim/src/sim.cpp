// apta-sim: the System of system.hpp on an analytical backend, one event queue in ns. Compute
// servers replay trace phases through LRU caches of line keys at fixed latencies (an event's
// misses overlap up to the MSHR count, its lines return at the L1-L2 path's bandwidth and its DRAM
// lines one line period apart); the memory server's DRAM is a line stream with a fixed latency
// (controller + closed page) (sim/README.md "What it models").
#include "sim.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <queue>
#include <stdexcept>

#include "cache.hpp"
#include "system.hpp"

namespace apta {

namespace {

struct Ev {
  double t;
  uint64_t seq;
  std::function<void()> fn;
};
struct EvLater {
  bool operator()(const Ev& a, const Ev& b) const { return a.t > b.t || (a.t == b.t && a.seq > b.seq); }
};

// DDR4 channel: a line stream one line per Params::dram_line_ns() + fixed latency (controller +
// closed-page tRCD + CL; banks not modelled).
struct Dram {
  double line_ns = 1, lat = 0, free_at = 0;
  // returns when the last of `lines` lines has been read/written
  double access(double t, uint64_t lines) {
    double start = std::max(t, free_at);
    free_at = start + double(lines) * line_ns;
    return free_at + lat;
  }
};

// Cache arrays are reused across the runs of one process (allocating and page-faulting
// 3 x 6 MB per run dominated short runs); the backend clears them.
struct CachePair { Cache l1, l2; };
std::vector<CachePair>& cache_pool() { static std::vector<CachePair> pool; return pool; }

class Analytic final : public Backend {
 public:
  Analytic(const Plan& plan, const Params& p) : plan_(plan), P(p) {
    if (cache_pool().size() < size_t(P.servers)) cache_pool().resize(size_t(P.servers));
    for (int k = 0; k < P.servers; ++k) {
      cache_pool()[size_t(k)].l1.init(P.l1_bytes, P.l1_ways, P.line);
      cache_pool()[size_t(k)].l2.init(P.l2_bytes, P.l2_ways, P.line);
    }
    msdram_.line_ns = P.dram_line_ns();
    msdram_.lat = P.dram_ctrl_ns + P.dram_lat_ns;
  }

  double now() const override { return now_; }
  void at(double t, std::function<void()> f) override { q_.push(Ev{std::max(t, now_), seq_++, std::move(f)}); }
  void compute(int i, int s, Phase ph, const Slots& slots, std::function<void(double)> done) override {
    wev_.clear();
    double d = replay(i, s, ph, slots);
    if (wev_.empty()) {
      at(now_ + d, [done, d] { done(d); });
      return;
    }
    auto w = std::make_shared<WindowRun>(WindowRun{std::move(wev_), 0, 0.0, d * P.clock_ghz, now_, s, std::move(done)});
    wev_ = {};
    window_step(w);
  }
  void ms_dram(double t, uint32_t, uint64_t, uint64_t lines, bool, std::function<void(double, double)> done) override {
    double last = msdram_.access(t, lines);
    if (done) done(t + msdram_.lat, last);  // the first line after one access latency
  }
  void install(int s, uint32_t obj, uint32_t ver, uint64_t lines) override {
    Cache& l2 = cache_pool()[size_t(s)].l2;
    for (uint64_t l = 0; l < lines; ++l) l2.access(object_line_key(obj, ver, l));
  }

  void bind(RunResult* r) { R_ = r; }
  bool window = false;  // CXL cached: the objects a function got are read in the CXL window  // where the replay's counters go (the system's result)

  // the event loop: until the queue drains or the horizon
  void run(double horizon_ns) {
    while (!q_.empty()) {
      Ev e = q_.top();
      q_.pop();
      if (e.t > horizon_ns) break;
      now_ = e.t;
      ++R_->sim_events;
      e.fn();
    }
  }

 private:
  const Plan& plan_;
  const Params& P;
  RunResult* R_ = nullptr;
  std::priority_queue<Ev, std::vector<Ev>, EvLater> q_;
  uint64_t seq_ = 0;
  double now_ = 0;
  Dram msdram_;

  // ---- local replay: L1 -> L2 -> local DDR4 at a fixed CPI --------------------------------
  // CPU time of this process: the replay rate on one core, whatever else shares the machine
  static double cpu_s() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + ts.tv_nsec * 1e-9;
  }
  // The events of a phase in chunks, each in three passes: (1) every line of the chunk's events
  // through L1, in trace order, keeping each event's L1 hits and the keys that missed; (2) those
  // keys through L2, in the same order, the set of a key kPrefetch keys ahead requested from the
  // host's memory meanwhile (the L2 model's 4 MB tag array is beyond the host's caches: a lookup
  // would wait for its set); (3) each event's cycles. L1 never depends on L2 (an L1 miss fills L1
  // whatever L2 says), so both caches see exactly the accesses, in exactly the order, of one pass
  // per line, and the cycles are summed in the same order: the results are those of that loop.
  static constexpr size_t kChunkKeys = 4096;   // L1 misses buffered before the L2 pass
  static constexpr size_t kPrefetch = 16;      // L2 sets requested ahead
  struct EventMiss { uint32_t l1_hits, misses; };
  // An event whose misses reach the CXL window (CXL cached): at cycle `at` of the phase its window
  // lines go out as line requests over the server's link (the System's, jittered like any
  // message), while its other misses take `local` cycles; the phase goes on when both are done.
  struct WindowEvent { double at, local; uint32_t lines; };
  std::vector<WindowEvent> wev_;               // of the phase being replayed
  struct WindowRun {
    std::vector<WindowEvent> ev;
    size_t k;
    double pos, total;                         // cycles of the phase timeline done, and in all
    double t0;
    int s;
    std::function<void(double)> done;
  };
  void window_step(const std::shared_ptr<WindowRun>& w) {
    if (w->k == w->ev.size()) {
      at(now_ + (w->total - w->pos) / P.clock_ghz, [this, w] { w->done(now_ - w->t0); });
      return;
    }
    const WindowEvent e = w->ev[w->k];
    at(now_ + (e.at - w->pos) / P.clock_ghz, [this, w, e] {
      auto pending = std::make_shared<int>(2);
      auto next = [this, w, e, pending] {
        if (--*pending) return;
        w->pos = e.at + e.local;
        ++w->k;
        window_step(w);
      };
      window_fetch(w->s, e.lines, next);
      at(now_ + e.local / P.clock_ghz, next);
    });
  }
  static constexpr uint64_t kWindow = 1ull << 62;  // a line of the CXL window (object ids stay below 2^18)
  std::vector<uint64_t> miss_keys_;            // of the chunk, in order
  std::vector<uint8_t> miss_dram_;             // per miss key: went to DRAM
  std::vector<EventMiss> chunk_;               // per event of the chunk

  double replay(int i, int s, Phase ph, const Slots& slots) {
    const double c0 = cpu_s();
    const auto& tr = plan_.traces[size_t(i)];
    CachePair& x = cache_pool()[size_t(s)];
    const double dram_cyc = (P.dram_ctrl_ns + P.dram_lat_ns) * P.clock_ghz;
    const double dram_line_cyc = P.dram_line_ns() * P.clock_ghz;
    const double l2_line_cyc = double(P.line) / P.l2_bytes_per_cycle;
    // a window line: Req up, the directory, DRAM, DRS down; a stream of them at the link's flit rate
    double cyc = 0;
    uint64_t lines = 0;
    const uint32_t end = tr.phase_begin[ph + 1];
    for (uint32_t e0 = tr.phase_begin[ph]; e0 < end;) {
      // (1) L1
      miss_keys_.clear();
      chunk_.clear();
      uint32_t e1 = e0;
      for (; e1 < end && miss_keys_.size() < kChunkKeys; ++e1) {
        const Event& ev = tr.events[e1];
        unsigned l1_hits = 0;
        const size_t before = miss_keys_.size();
        for (uint32_t k = 0; k < ev.nranges; ++k) {
          const Range& rg = tr.ranges[ev.first_range + k];
          lines += rg.lines;
          // keys of consecutive lines are consecutive (the line number is in the low bits)
          uint64_t key0 = rg.slot == 0xFF ? local_line_key(i, rg.first_line)
                                          : object_line_key(slots.obj[rg.slot], slots.ver[rg.slot], rg.first_line);
          if (window && rg.slot != 0xFF && tr.objects[rg.slot].kind == "get") key0 |= kWindow;
          for (uint32_t l = 0; l < rg.lines; ++l) {
            const uint64_t key = key0 + l;
            if (x.l1.access(key)) ++l1_hits;
            else miss_keys_.push_back(key);
          }
        }
        chunk_.push_back(EventMiss{l1_hits, uint32_t(miss_keys_.size() - before)});
      }
      // (2) L2
      const size_t n = miss_keys_.size();
      miss_dram_.resize(n);
      for (size_t j = 0; j < std::min(n, kPrefetch); ++j) x.l2.prefetch(miss_keys_[j]);
      for (size_t j = 0; j < n; ++j) {
        if (j + kPrefetch < n) x.l2.prefetch(miss_keys_[j + kPrefetch]);
        miss_dram_[j] = !x.l2.access(miss_keys_[j]);
      }
      // (3) cycles, event by event
      size_t m = 0;
      for (uint32_t e = e0; e < e1; ++e) {
        const EventMiss& em = chunk_[e - e0];
        cyc += double(tr.events[e].ops) * P.cpi;
        const unsigned miss = em.misses;
        uint64_t dram_lines = 0, cxl_lines = 0;
        for (unsigned k = 0; k < miss; ++k)
          if (miss_dram_[m + k]) ++((miss_keys_[m + k] & kWindow) ? cxl_lines : dram_lines);
        m += miss;
        cyc += double(em.l1_hits) * P.l1_lat;
        R_->l1_hits += em.l1_hits;
        R_->l1_misses += miss;
        R_->dram_lines += dram_lines;
        const double maxlat = dram_lines == 0 ? double(P.l2_lat) : P.l2_lat + dram_cyc;
        // an event's misses overlap, at most `mshrs` outstanding; its DRAM lines leave one channel
        // one burst apart, the first after a whole miss latency (as the memory server's Dram), and
        // all of its lines return over the L1-L2 data path, one line per l2_line_cyc; its window
        // lines are the link's (window_step)
        const double local = miss == 0 ? 0.0
            : std::max({std::ceil(double(miss) / P.mshrs) * maxlat,
                        dram_lines ? maxlat + double(dram_lines - 1) * dram_line_cyc : 0.0,
                        maxlat + double(miss - 1) * l2_line_cyc});
        if (cxl_lines) wev_.push_back(WindowEvent{cyc, local, uint32_t(cxl_lines)});
        cyc += local;
      }
      e0 = e1;
    }
    R_->events += tr.phase_begin[ph + 1] - tr.phase_begin[ph];
    R_->line_accesses += lines;
    R_->replay_s += cpu_s() - c0;
    return cyc / P.clock_ghz;
  }

};

}  // namespace

RunResult simulate(const Plan& plan, const std::string& params_path, const Scenario& sc) {
  Params p = Params::load(params_path, sc.overrides);
  Config c = Config::from(p, sc.config);
  Analytic backend(plan, p);
  backend.window = c.line_gran && c.cache == Caching::Sync;
  System sys(plan, p, c, sc, backend);
  backend.bind(&sys.result());
  auto w0 = std::chrono::steady_clock::now();
  sys.start();
  backend.run(sc.horizon_ns);
  RunResult& r = sys.finish();
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  return r;
}

}  // namespace apta
