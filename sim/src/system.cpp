#include "system.hpp"

#include <algorithm>
#include <stdexcept>

namespace apta {

System::System(const Plan& plan, Params p, Config c, Scenario s, Backend& b)
    : plan_(plan), P(std::move(p)), C(std::move(c)), S(std::move(s)), B(b), rng_(S.seed) {
  sv_.resize(size_t(P.servers));
  // CXL cached: an event's loads of window lines are line reads through the directory, each an
  // operation of its own (Operation jitter mode)
  B.window_fetch = [this](int s, uint64_t n, std::function<void()> done) {
    line_stream(s, 0, n, false, true, [this, s, done] { if (sv_[size_t(s)].alive) done(); }, op_z());
  };
  double lat = C.rdma_link ? P.rdma_lat_ns : P.dm_lat_ns, bw = C.rdma_link ? P.rdma_gbps : P.dm_gbps;
  for (auto& x : sv_)
    for (Link* l : {&x.up, &x.down}) {
      l->gbps = bw; l->lat = lat;
      if (S.jitter) {
        l->cv = P.jitter_cv; l->rng = &rng_; l->stats = &jstats_; l->tau_ns = P.jitter_corr_ns;
        l->mode = S.jitter_mode == "operation" ? JitterMode::Operation
                : S.jitter_mode == "correlated" ? JitterMode::Correlated : JitterMode::Message;
      }
    }
  if (C.cache == Caching::Async) dir_ = std::make_unique<Directory>(P.servers, P.dir_sets, P.dir_ways, P.max_pend);
  size_t no = plan_.objects.size();
  version_.assign(no, 1);  // workflow inputs exist in version 1
  next_version_.assign(no, 2);
  sync_sharers_.assign(no, 0);
  commits_.assign(no, 0);
  rank_.assign(no, {{1u, 0u}});  // version 1, the input, is no commit
  writer_.assign(no, {});
  // Dataflow: a read names the commit its producer makes. That count is unambiguous when the
  // object has one writer in the workflow: any attempt of it commits (a re-execution of one that
  // had committed makes a second commit, with the same output). With two writers a re-executed
  // first writer's second commit would look like the second writer's, so a function reading such
  // an object is invoked after its predecessors finish and reads without a version, under the
  // pending-invalidation rule (sim/README.md "Dataflow").
  // An object whose one writer is not an ancestor (video's concat writes the input splitVideo
  // read) is read at 0 commits: the writer is a descendant, whose put waits for its predecessors
  // to finish (start_put), or the workflow races.
  const size_t ni = plan_.instances.size();
  std::vector<int> writers(no, 0);
  for (const auto& pi : plan_.instances) for (int o : pi.writes) ++writers[size_t(o)];
  anc_.assign(ni, std::vector<bool>(ni, false));
  auto& anc = anc_;
  std::function<void(size_t)> close = [&](size_t i) {
    for (int d : plan_.instances[i].deps)
      if (!anc[i][size_t(d)]) {
        anc[i][size_t(d)] = true;
        close(size_t(d));
        for (size_t j = 0; j < ni; ++j) if (anc[size_t(d)][j]) anc[i][j] = true;
      }
  };
  early_.assign(ni, false);
  need_.assign(ni, {});
  for (size_t i = 0; i < ni; ++i) {
    close(i);
    const auto& pi = plan_.instances[i];
    bool ok = C.early;
    for (int o : pi.reads) {
      ok = ok && writers[size_t(o)] <= 1;
      uint32_t n = 0;
      for (size_t j = 0; j < ni; ++j)
        if (anc[i][j] && std::count(plan_.instances[j].writes.begin(), plan_.instances[j].writes.end(), o)) ++n;
      need_[i].push_back(n);
    }
    early_[i] = ok;
  }
  runs_.resize(plan_.instances.size());
  R.inst.resize(plan_.instances.size());
  R.sc = S;
  for (size_t i = 0; i < plan_.instances.size(); ++i) {
    const auto& pi = plan_.instances[i];
    if (pi.server < 0 || pi.server >= P.servers)
      throw std::runtime_error("plan: instance " + pi.function + "." + std::to_string(pi.index) + ": server c" +
                               std::to_string(pi.server + 1) + " outside the " + std::to_string(P.servers) + " compute servers");
    auto& r = runs_[i];
    for (auto& to : plan_.traces[i].objects) {
      r.slots.obj.push_back(uint32_t(std::find(plan_.objects.begin(), plan_.objects.end(), to.name) - plan_.objects.begin()));
      r.slots.ver.push_back(0);
    }
  }
}

void System::start() {
  for (auto& f : S.failures) {
    if (f.server < 0 || f.server >= P.servers) throw std::runtime_error("failures: server index out of range");
    at(f.at_ns, [this, f] { fail_server(f.server); });
  }
  at(0, [this] { schedule(); });
}

RunResult& System::finish() {
  R.completed = std::all_of(runs_.begin(), runs_.end(), [](const Run& r) { return r.state == 2; });
  if (!R.completed && R.stall.empty()) {
    std::string w;
    for (size_t i = 0; i < runs_.size(); ++i)
      if (runs_[i].state != 2) w += (w.empty() ? "" : ", ") + plan_.instances[i].function + "." + std::to_string(plan_.instances[i].index);
    R.stall = "unfinished: " + w;
  }
  R.makespan_ns = R.get_ns = R.put_ns = R.compute_ns = 0;
  R.gets_hit = R.gets_miss = R.puts_no_inv = R.puts_inv = 0;
  R.obj_gets_hit = R.obj_gets_miss = R.obj_puts_no_inv = R.obj_puts_inv = 0;
  for (size_t i = 0; i < runs_.size(); ++i) {
    auto& ir = R.inst[i];
    ir.early = early_[i] && !plan_.instances[i].deps.empty();
    if (runs_[i].state != 2) continue;
    R.makespan_ns = std::max(R.makespan_ns, ir.end);
    R.get_ns += ir.get_ns; R.put_ns += ir.put_ns; R.compute_ns += ir.compute_ns;
    if (ir.has_get) (ir.get_hit ? R.gets_hit : R.gets_miss)++;
    if (ir.has_put) (ir.put_inv ? R.puts_inv : R.puts_no_inv)++;
    R.obj_gets_hit += ir.obj_get_hit; R.obj_gets_miss += ir.obj_get_miss;
    R.obj_puts_no_inv += ir.obj_put_no_inv; R.obj_puts_inv += ir.obj_put_inv;
  }
  const JitterStats& j = jstats_;
  R.jitter_messages = j.messages; R.jitter_draws = j.draws;
  if (j.messages > 0) {
    R.jitter_mean = j.s / double(j.messages);
    R.jitter_cv = std::sqrt(std::max(0.0, j.s2 / double(j.messages) - R.jitter_mean * R.jitter_mean)) / R.jitter_mean;
  }
  if (j.pairs > 1) {
    double n = double(j.pairs), cov = j.pxy / n - (j.px / n) * (j.py / n);
    double vx = j.pxx / n - (j.px / n) * (j.px / n), vy = j.pyy / n - (j.py / n) * (j.py / n);
    R.jitter_lag1 = vx > 0 && vy > 0 ? cov / std::sqrt(vx * vy) : 0;
  }
  return R;
}

uint64_t System::lines_of(int obj) const {
  return std::max<uint64_t>(1, (plan_.object_bytes[size_t(obj)] + P.line - 1) / P.line);
}

// a message on server s's link: up (to the memory server) or down; fn runs on arrival. It is
// sent at not_before (which may lie in the past when a backend reports DRAM completions late:
// the reply then streams from its first line, as it would have) or now.
void System::msg(int s, bool up, double bytes, std::function<void()> fn, double not_before, double min_end, double z,
                 const MsgKind* kind) {
  ++R.messages;
  if (!C.rdma_link) {  // the DM link: the backend's own model, if it has one
    const uint64_t flits = uint64_t(std::ceil(bytes / P.flit_bytes));
    const MsgKind k = kind ? *kind : flits > 1 ? MsgKind::Data : up ? MsgKind::Request : MsgKind::Ack;
    if (B.link_message(s, up, k, flits, not_before > 0 ? not_before : now(), min_end, fn)) return;
  }
  Link& l = up ? sv_[size_t(s)].up : sv_[size_t(s)].down;
  at(l.send(not_before > 0 ? not_before : now(), bytes, min_end, z), std::move(fn));
}

// Operation jitter mode: one latency draw per store operation, which every message of it carries
// (msg's z); in the other modes NaN, and each link draws per message.
double System::op_z() {
  if (!S.jitter || S.jitter_mode != "operation" || P.jitter_cv <= 0) return std::numeric_limits<double>::quiet_NaN();
  std::normal_distribution<double> nd(0.0, 1.0);
  ++jstats_.draws;
  return nd(rng_);
}

// Software protocol overhead of the RDMA_f configurations (§IV-B): the operation takes
// rdma_sw_factor times its hardware time on the same interconnect, plus the fixed per-call cost.
std::function<void()> System::sw_done(double t0, std::function<void()> cb) {
  if (!C.sw) return cb;
  return [this, t0, cb] { at(t0 + P.sw_factor * (now() - t0) + P.sw_call_ns, cb); };
}

bool System::live(int i, uint64_t gen) const { return runs_[size_t(i)].gen == gen && runs_[size_t(i)].state == 1; }

// a fetched object's lines land in the LLC, unless it is larger than the LLC (uncacheable,
// §III-A a2); `cache`: it is also an object-cache copy (versioned)
void System::install(int s, int obj, uint32_t ver, bool cache) {
  const uint64_t n = lines_of(obj);
  if (fits_llc(n) && !(C.line_gran && C.cache == Caching::Sync)) B.install(s, uint32_t(obj), ver, n);
  if (cache) sv_[size_t(s)].held[obj] = ver;
}

void System::set_slots(int i, int obj, const char* kind, uint32_t ver) {
  const auto& tr = plan_.traces[size_t(i)];
  auto& r = runs_[size_t(i)];
  for (size_t k = 0; k < tr.objects.size(); ++k)
    if (r.slots.obj[k] == uint32_t(obj) && tr.objects[k].kind == kind) r.slots.ver[k] = ver;
}

// ---- an instance: GET -> COMPUTE -> PUT -------------------------------------------------
void System::begin(int i, int s) {
  auto& r = runs_[size_t(i)];
  r.state = 1; r.server = s; ++r.gen; r.k = 0; r.any_hit = r.any_inv = false; r.put_wait = false; r.restarting = false;
  sv_[size_t(s)].running = i;
  auto& ir = R.inst[size_t(i)];
  if (ir.start >= 0) ++ir.restarts;
  ir.start = now(); ir.server = s;
  ir.has_get = !plan_.instances[size_t(i)].reads.empty();
  ir.has_put = !plan_.instances[size_t(i)].writes.empty();
  ir.obj_get_hit = ir.obj_get_miss = ir.obj_put_no_inv = ir.obj_put_inv = 0;  // a re-execution counts afresh
  r.t0 = now();
  get_next(i, r.gen);
}

void System::get_next(int i, uint64_t gen) {
  if (!live(i, gen)) return;
  auto& r = runs_[size_t(i)];
  const auto& pi = plan_.instances[size_t(i)];
  int s = r.server;
  if (r.k < pi.reads.size()) {
    int obj = pi.reads[r.k];
    uint32_t need = early_[size_t(i)] ? need_[size_t(i)][r.k] : 0;
    do_get(i, gen, s, obj, need, [this, i, gen, obj, need](bool hit, uint32_t ver) {
      if (!live(i, gen)) return;
      if (rank(obj, ver) < need) ++R.version_violations;  // V1: never older than named
      // the store contract: a function reads what functions before it in the DAG wrote
      auto w = writer_[size_t(obj)].find(ver);
      if (w != writer_[size_t(obj)].end() && w->second != i && !anc_[size_t(i)][size_t(w->second)]) ++R.dag_violations;
      auto& rr = runs_[size_t(i)];
      rr.any_hit |= hit;
      ++(hit ? R.inst[size_t(i)].obj_get_hit : R.inst[size_t(i)].obj_get_miss);
      set_slots(i, obj, "get", ver);
      ++rr.k;
      get_next(i, gen);
    });
    return;
  }
  // the function reading what it got (mostly LLC hits)
  B.compute(i, s, PH_GET, r.slots, [this, i, gen, s](double) {
    if (!live(i, gen)) return;
    auto& rr = runs_[size_t(i)];
    R.inst[size_t(i)].get_ns = now() - rr.t0;
    R.inst[size_t(i)].get_hit = rr.any_hit;
    B.compute(i, s, PH_COMPUTE, rr.slots, [this, i, gen, s](double c) {
      if (!live(i, gen)) return;
      R.inst[size_t(i)].compute_ns = c;
      start_put(i, gen);
    });
  });
}

void System::start_put(int i, uint64_t gen) {
  if (!live(i, gen)) return;
  auto& r = runs_[size_t(i)];
  // Dataflow: puts commit in DAG order. A function invoked early puts only after its
  // predecessors finished, so its put never overtakes a read of theirs (a write after read of
  // the same object, as finra's marginBalance after trdate).
  if (C.early && !deps_done(i) && S.mutant != "no_put_gate") { r.put_wait = true; return; }
  r.put_wait = false;
  r.t0 = now();
  r.k = 0;
  // the new versions' lines are written locally first, then put (flushed) to the store
  for (int obj : plan_.instances[size_t(i)].writes) {
    writer_[size_t(obj)][next_version_[size_t(obj)]] = i;
    set_slots(i, obj, "put", next_version_[size_t(obj)]++);
  }
  B.compute(i, r.server, PH_PUT, r.slots, [this, i, gen](double) { put_next(i, gen); });
}

void System::put_next(int i, uint64_t gen) {
  if (!live(i, gen)) return;
  auto& r = runs_[size_t(i)];
  const auto& pi = plan_.instances[size_t(i)];
  if (r.k < pi.writes.size()) {
    int obj = pi.writes[r.k];
    uint32_t ver = 0;
    const auto& tr = plan_.traces[size_t(i)];
    for (size_t k = 0; k < tr.objects.size(); ++k)
      if (r.slots.obj[k] == uint32_t(obj) && tr.objects[k].kind == "put") ver = r.slots.ver[k];
    do_put(i, gen, r.server, obj, ver, [this, i, gen](bool inv) {
      if (!live(i, gen)) return;
      runs_[size_t(i)].any_inv |= inv;
      ++(inv ? R.inst[size_t(i)].obj_put_inv : R.inst[size_t(i)].obj_put_no_inv);
      ++runs_[size_t(i)].k;
      put_next(i, gen);
    });
    return;
  }
  auto& ir = R.inst[size_t(i)];
  ir.put_ns = now() - r.t0;
  ir.put_inv = r.any_inv;
  ir.end = now();
  r.state = 2;
  sv_[size_t(r.server)].running = -1;
  for (size_t j = 0; j < runs_.size(); ++j)
    if (runs_[j].put_wait && runs_[j].state == 1 && deps_done(int(j))) start_put(int(j), runs_[j].gen);
  if (!finished_ && std::all_of(runs_.begin(), runs_.end(), [](const Run& x) { return x.state == 2; })) {
    finished_ = true;
    B.finished();
  }
  schedule();
}

// ---- get ----------------------------------------------------------------------------------
void System::do_get(int i, uint64_t gen, int s, int obj, uint32_t need, std::function<void(bool, uint32_t)> cb) {
  Server& x = sv_[size_t(s)];
  auto h = x.held.find(obj);
  bool held = h != x.held.end();
  switch (C.cache) {
    case Caching::Async:
    case Caching::Sync:
      // a versioned get hits only a copy at least as new as the version it names
      if (held && (rank(obj, h->second) >= need || S.mutant == "hit_ignores_version")) {  // a hit: served from the compute server's caches
        // the scheduler rule prevents a stale hit of an unversioned get
        if (need == 0 && h->second != version_[size_t(obj)]) ++R.stale_reads;
        cb(true, h->second);
        return;
      }
      break;
    case Caching::Version:
      if (held) {  // FaaS caching: one round trip to check the version, no data unless stale
        uint32_t mine = h->second;
        double t0 = now(), z = op_z();
        auto back = sw_done(t0, [this, i, gen, s, obj, mine, cb] {
          if (!live(i, gen)) return;
          if (mine == version_[size_t(obj)]) { cb(true, mine); return; }
          fetch(i, gen, s, obj, 0, [cb](uint32_t v) { cb(false, v); });
        });
        msg(s, true, P.flit_bytes, [this, s, back, z] {
          msg(s, false, P.flit_bytes, back, now() + ms_ns(P.otc_cycles), 0, z);
        }, 0, 0, z);
        return;
      }
      break;
    case Caching::None:
      break;
  }
  fetch(i, gen, s, obj, need, [cb](uint32_t v) { cb(false, v); });
}

// bring object `obj` from the memory server to server s
void System::fetch(int i, uint64_t gen, int s, int obj, uint32_t need, std::function<void(uint32_t)> cb) {
  uint64_t n = lines_of(obj);
  if (C.line_gran) {  // CXL: one cache-line request per line, MSHR-limited
    bool dir = C.cache == Caching::Sync;
    auto fetched = [this, s, obj, cb] {
      uint32_t v = version_[size_t(obj)];
      if (C.cache == Caching::Sync) sync_sharers_[size_t(obj)] |= 1ull << s;
      install(s, obj, v, C.cache != Caching::None);
      cb(v);
    };
    // with a packet-level link: CXL cached, the function's own loads fetch the lines as it reads
    // them; CXL uncached, the backend reads them into the local copy
    if (C.cache == Caching::Sync) at(now(), fetched);  // the function's own loads fetch the lines
    else if (!B.cxl_packets()) line_stream(s, obj, n, false, dir, fetched, op_z());
    else if (C.cache == Caching::None)
      B.cxl_read_lines(s, uint32_t(obj), version_[size_t(obj)], n, [this, s, fetched] { if (sv_[size_t(s)].alive) fetched(); });
    else at(now(), fetched);
    return;
  }
  // object-granular: one request, the OSC serves every line in one bulk reply
  double t0 = now();
  auto vp = std::make_shared<uint32_t>(0);
  auto done = sw_done(t0, [this, i, gen, vp, cb] { if (live(i, gen)) cb(*vp); });
  double z = op_z();
  msg(s, true, P.flit_bytes, [this, s, obj, n, vp, done, z, need] {
    at(now() + ms_ns(P.otc_cycles + P.osc_cycles), [this, s, obj, n, vp, done, z, need] { serve(s, obj, n, vp, done, z, need); });
  }, 0, 0, z);
}

void System::serve(int s, int obj, uint64_t n, std::shared_ptr<uint32_t> vp, std::function<void()> done, double z, uint32_t need) {
  if (need > commits_[size_t(obj)] && S.mutant != "release_early") {  // not committed: hold it, with no directory entry
    if (holds_.size() < size_t(P.hold_slots)) {
      holds_.push_back(Hold{s, obj, need, n, vp, done, z, now()});
      ++R.held_gets;
      return;
    }
    // the hold table is full: GetRetry at once (the request channel never blocks); the compute
    // server sends the get again
    ++R.get_retries;
    msg(s, false, P.flit_bytes, [this, s, obj, n, vp, done, z, need] {
      if (!sv_[size_t(s)].alive) return;
      msg(s, true, P.flit_bytes, [this, s, obj, n, vp, done, z, need] {
        at(now() + ms_ns(P.otc_cycles + P.osc_cycles), [this, s, obj, n, vp, done, z, need] { serve(s, obj, n, vp, done, z, need); });
      }, 0, 0, z);
    }, 0, 0, z);
    return;
  }
  if (C.cache == Caching::Async) {
    ReqOutcome o = dir_->get(s, sv_[size_t(s)].epoch, uint32_t(obj), 0, uint32_t(std::min<uint64_t>(n, UINT32_MAX)));
    if (o.result == Result::Drop) return;  // a fenced (zombie) server: nothing is served
    if (o.result == Result::Stall) {
      for (auto& sn : o.snps) send_inval(sn);
      at(now() + P.stall_retry_ns, [this, s, obj, n, vp, done, z, need] { serve(s, obj, n, vp, done, z, need); });
      return;
    }
  }
  uint32_t v = version_[size_t(obj)];
  *vp = v;
  // the reply streams as lines come out of DRAM: it starts with the first line and its
  // channel is busy at least until the last line is out
  B.ms_dram(now(), uint32_t(obj), 0, n, false, [this, s, obj, v, n, done, z](double first, double last) {
    if (!C.rdma_link && fits_llc(n)) B.data_arriving(s, uint32_t(obj), v, n);
    msg(s, false, double(n) * P.flit_bytes, [this, s, obj, v, done] {
      if (!sv_[size_t(s)].alive) return;
      install(s, obj, v, C.cache != Caching::None);
      done();
    }, first, last, z);
  });
}

// CXL line-granular transfers: up to `mshrs` outstanding line requests. A read sends a request
// flit and gets a data flit back; a write sends a data flit and gets a completion flit.
struct System::Stream {
  int s, obj;
  uint64_t n, issued = 0, done = 0;
  unsigned out = 0;
  bool write, dir;
  std::function<void()> cb;
  double z;  // the operation's latency draw (Operation jitter mode), else NaN
};
void System::line_stream(int s, int obj, uint64_t n, bool write, bool dir, std::function<void()> cb, double z) {
  auto st = std::make_shared<Stream>(Stream{s, obj, n, 0, 0, 0, write, dir, std::move(cb), z});
  if (n == 0) { st->cb(); return; }
  issue(st);
}
void System::issue(const std::shared_ptr<Stream>& st) {
  while (st->out < P.mshrs && st->issued < st->n) {
    const uint64_t line = st->issued;
    ++st->issued; ++st->out;
    msg(st->s, true, P.flit_bytes, [this, st, line] {
      double t = now() + (st->dir ? ms_ns(P.otc_cycles) : 0);
      auto reply = [this, st] {
        if (!sv_[size_t(st->s)].alive) return;
        --st->out; ++st->done;
        if (st->done == st->n) st->cb(); else issue(st);
      };
      // a write completes when accepted; a read when its data is out of DRAM
      if (st->write) {
        B.ms_dram(t, uint32_t(st->obj), line, 1, true, nullptr);
        msg(st->s, false, P.flit_bytes, reply, t, 0, st->z);
      } else {
        B.ms_dram(t, uint32_t(st->obj), line, 1, false, [this, st, reply](double, double last) { msg(st->s, false, P.flit_bytes, reply, last, 0, st->z); });
      }
    }, 0, 0, st->z);
  }
}

// a logged put's line writes (obj: the object in version ver, or kRedoLog)
void System::put_lines(int s, int obj, uint32_t ver, uint64_t n, bool dir, std::function<void()> cb, double z) {
  if (B.cxl_packets()) {
    B.cxl_write_lines(s, uint32_t(obj), ver, 0, n, [this, s, cb] { if (sv_[size_t(s)].alive) cb(); });
    return;
  }
  line_stream(s, obj, n, true, dir, std::move(cb), z);
}

// ---- put ----------------------------------------------------------------------------------
void System::do_put(int i, uint64_t gen, int s, int obj, uint32_t ver, std::function<void(bool)> cb) {
  uint64_t n = lines_of(obj);
  if (C.line_gran) { logged_put(i, gen, s, obj, ver, n, 0, false, cb, op_z()); return; }
  // object-granular one-phase commit: prepare + n line writes, then commit
  double t0 = now();
  auto inv = std::make_shared<bool>(false);
  auto done = sw_done(t0, [this, i, gen, inv, cb] { if (live(i, gen)) cb(*inv); });
  double z = op_z();
  msg(s, true, double(n + 1) * P.flit_bytes, [this, s, obj, ver, n, inv, done, z] {
    at(now() + ms_ns(P.otc_cycles), [this, s, obj, ver, n, inv, done, z] { commit(s, obj, ver, n, inv, done, z); });
  }, 0, 0, z);
}

void System::commit(int s, int obj, uint32_t ver, uint64_t n, std::shared_ptr<bool> inv, std::function<void()> done, double z) {
  if (C.cache == Caching::Async) {
    ReqOutcome o = dir_->commit(s, sv_[size_t(s)].epoch, uint32_t(obj), 0, uint32_t(std::min<uint64_t>(n, UINT32_MAX)));
    if (o.result == Result::Drop) return;  // zombie put from a fenced server: never commits
    if (o.result == Result::Stall) {
      for (auto& sn : o.snps) send_inval(sn);
      at(now() + P.stall_retry_ns, [this, s, obj, ver, n, inv, done, z] { commit(s, obj, ver, n, inv, done, z); });
      return;
    }
    *inv = !o.snps.empty();
    for (auto& sn : o.snps) send_inval(sn);  // lazily: the commit does not wait for the acks
  } else if (C.cache == Caching::Version) {
    for (int x = 0; x < P.servers; ++x) {  // copies elsewhere go stale (no invalidation)
      auto h = sv_[size_t(x)].held.find(obj);
      if (x != s && h != sv_[size_t(x)].held.end() && h->second == version_[size_t(obj)]) *inv = true;
    }
  }
  version_[size_t(obj)] = ver;
  rank_[size_t(obj)][ver] = ++commits_[size_t(obj)];
  release(obj);
  B.ms_dram(now(), uint32_t(obj), 0, n, true, nullptr);  // the OPC drains its staging to DRAM after the commit
  msg(s, false, P.flit_bytes, [this, s, obj, ver, done] {
    if (!sv_[size_t(s)].alive) return;
    if (C.cache != Caching::None) sv_[size_t(s)].held[obj] = ver;  // write-allocate
    done();
  }, 0, 0, z);
}

// Apta / RDMA_f+Apta: object-granular back-invalidation to one sharer, acked asynchronously
void System::send_inval(const Snp& sn) {
  int x = sn.server;
  double z = op_z();  // the invalidation and its ack: one operation
  static const MsgKind snoop = MsgKind::Snoop, answer = MsgKind::SnoopAck;
  msg(x, false, P.flit_bytes, [this, sn, x, z] {
    if (!sv_[size_t(x)].alive || sv_[size_t(x)].epoch != sn.epoch) return;  // dead: no ack ever
    double handler = P.inv_handler_ns + (C.sw ? P.sw_call_ns : 0);  // reverse map (+ RDMA_f call)
    at(now() + handler, [this, sn, x, z] {
      if (!sv_[size_t(x)].alive) return;
      auto ack = [this, sn, x, z] {
        if (!sv_[size_t(x)].alive) return;
        sv_[size_t(x)].held.erase(int(sn.obj));
        msg(x, true, P.flit_bytes, [this, sn, x] {
          dir_->ack(x, sn.epoch, sn.obj);
          schedule();
        }, 0, 0, z, &answer);
      };
      // the handler flushes the copy's lines from the caches (a backend with caches of its own)
      auto h = sv_[size_t(x)].held.find(int(sn.obj));
      if (h == sv_[size_t(x)].held.end() ||
          !B.flush_copy(x, sn.obj, h->second, lines_of(int(sn.obj)), ack))
        ack();
    });
  }, 0, 0, z, &snoop);
}

// CXL: redo-logged put, stage by stage, each a burst of line writes ended by a persist barrier
void System::logged_put(int i, uint64_t gen, int s, int obj, uint32_t ver, uint64_t n, size_t stage, bool inv,
                std::function<void(bool)> cb, double z) {
  if (!live(i, gen)) return;
  if (stage == P.log_stages.size()) {
    version_[size_t(obj)] = ver;
    if (C.cache == Caching::Sync) {
      sync_sharers_[size_t(obj)] = 1ull << s;
      sv_[size_t(s)].held[obj] = ver;
    }
    cb(inv);
    return;
  }
  const std::string& k = P.log_stages[stage];
  uint64_t lines = k == "log" ? n + 1 : k == "apply" ? n : 1;
  auto next = [this, i, gen, s, obj, ver, n, stage, cb, z](bool inv2) { logged_put(i, gen, s, obj, ver, n, stage + 1, inv2, cb, z); };
  if (k == "apply" && C.cache == Caching::Sync) {
    uint64_t others = sync_sharers_[size_t(obj)] & ~(1ull << s);
    if (others) {
      // MESI-style: the writes need ownership; the directory invalidates every sharer and the
      // put's apply stage cannot complete before all of their acks are in (blocking)
      auto pending = std::make_shared<int>(0), streams = std::make_shared<int>(1);
      auto join = std::make_shared<std::function<void()>>();
      *join = [this, pending, streams, next] {
        if (*pending == 0 && *streams == 0) next(true);
      };
      for (int x = 0; x < P.servers; ++x) {
        if (!(others >> x & 1)) continue;
        ++*pending;
        sync_invalidate(s, x, obj, n, pending, join, z);
      }
      if (P.cxl_inv_timeout_ns >= 0)
        at(now() + P.cxl_inv_timeout_ns, [this, pending, join] {
          if (*pending == 0) return;
          *pending = 0;  // give up on the missing acks (not CXL 3.0 behaviour: an option)
          ++R.inv_timeouts;
          R.stall.clear();
          (*join)();
        });
      put_lines(s, obj, ver, lines, true, [streams, join] { *streams = 0; (*join)(); }, z);
      return;
    }
  }
  // the log, its flag and its clearing live in the memory server's redo-log area, apply writes the object
  put_lines(s, k == "apply" ? obj : int(kRedoLog), ver, lines, C.cache == Caching::Sync && k == "apply", [next, inv] { next(inv); }, z);
}

void System::sync_invalidate(int w, int x, int obj, uint64_t n, std::shared_ptr<int> pending, std::shared_ptr<std::function<void()>> join,
                             double z) {
  // n line snoops to sharer x (hardware, one L2 lookup each, pipelined), n acks back; the
  // writer learns of completion with the last write completion (one more flit down)
  auto dead = [this, w, x] {
    R.stall = "CXL cached: a put by c" + std::to_string(w + 1) + " waits for invalidation acks from dead server c" +
              std::to_string(x + 1) + " (blocking MESI invalidation)";
  };
  if (B.cxl_packets()) {  // the snoops are the backend's; a dead server's caches never answer
    if (!sv_[size_t(x)].alive) { dead(); return; }
    B.cxl_back_invalidate(x, uint32_t(obj), n, [this, w, x, obj, pending, join, z, dead] {
      if (!sv_[size_t(x)].alive) { dead(); return; }
      sv_[size_t(x)].held.erase(obj);
      msg(w, false, P.flit_bytes, [pending, join] {
        if (*pending > 0 && --*pending == 0) (*join)();
      }, 0, 0, z);
    });
    return;
  }
  msg(x, false, double(n) * P.flit_bytes, [this, w, x, obj, n, pending, join, z, dead] {
    if (!sv_[size_t(x)].alive) { dead(); return; }  // never acked
    at(now() + P.l2_lat / P.clock_ghz, [this, w, x, obj, n, pending, join, z] {
      sv_[size_t(x)].held.erase(obj);
      msg(x, true, double(n) * P.flit_bytes, [this, w, pending, join, z] {
        msg(w, false, P.flit_bytes, [pending, join] {
          if (*pending > 0 && --*pending == 0) (*join)();
        }, 0, 0, z);
      }, 0, 0, z);
    });
  }, 0, 0, z);
}

// ---- scheduling ---------------------------------------------------------------------------
bool System::deps_done(int i) const {
  for (int d : plan_.instances[size_t(i)].deps) if (runs_[size_t(d)].state != 2) return false;
  return true;
}
// The platform may invoke i: its predecessors finished or, invoked early (dataflow), were
// invoked themselves: DFlow's DScheduler invokes a function together with its predecessors,
// one level ahead (DFlow §3, Algorithm 1: the entry points and their successors at once; a
// finished function's successors' successors). Not while a predecessor waits for its
// re-execution (spec/murphi/README.md, VersionNamed).
bool System::triggered(int i) const {
  if (!early_[size_t(i)]) return deps_done(i);
  for (int d : plan_.instances[size_t(i)].deps)
    if (runs_[size_t(d)].restarting || (runs_[size_t(d)].state == 0 && !deps_done(d))) return false;
  return true;
}
bool System::placeable(int s, int i) const {
  const Server& x = sv_[size_t(s)];
  if (!x.alive || x.running >= 0) return false;
  // Scheduling Correctness Criterion (§III-B): never place a function on a server with
  // pending invalidations (nor a fenced one). A function invoked early reads only with versions:
  // a copy older than the version a get names is a miss, so it needs no such rule.
  if (dir_ && S.rule && !early_[size_t(i)] && !dir_->schedulable(s)) return false;
  if (dir_ && dir_->fenced(s)) return false;
  return true;
}

// Dataflow: a function that must run now (its predecessors finished: a re-execution, or one
// invoked after completion) finds every live server held by functions invoked early that wait
// for predecessors. The latest placed of those is stopped and invoked again later; without this
// the waiting functions could hold every server while the re-execution they wait for has none
// (the deadlock the Murphi model found: spec/murphi/README.md).
int System::preempt_for(int i) {
  if (!C.early || !deps_done(i)) return -1;
  int best = -1;
  for (int s = 0; s < P.servers; ++s) {
    const Server& x = sv_[size_t(s)];
    if (!x.alive || x.running < 0 || deps_done(x.running) || (dir_ && dir_->fenced(s))) continue;
    if (best < 0 || R.inst[size_t(x.running)].start > R.inst[size_t(sv_[size_t(best)].running)].start) best = s;
  }
  if (best < 0) return -1;
  auto& r = runs_[size_t(sv_[size_t(best)].running)];
  r.state = 0; ++r.gen; r.put_wait = false; r.ready_at = -1;
  sv_[size_t(best)].running = -1;
  drop_holds(best);
  B.failed(best);  // stop whatever it was replaying
  ++R.preemptions;
  return best;
}

void System::schedule() {
  if (scheduling_) return;
  scheduling_ = true;
  for (size_t i = 0; i < runs_.size(); ++i) {
    if (runs_[i].state != 0 || !triggered(int(i))) continue;
    // the invocation path (placement and start-up) runs from the trigger
    if (runs_[i].ready_at < 0) {
      runs_[i].ready_at = now() + P.invoke_ns;
      if (P.invoke_ns > 0) at(runs_[i].ready_at, [this] { schedule(); });
    }
    if (now() < runs_[i].ready_at) continue;
    int planned = plan_.instances[i].server;
    if (!S.locality && sv_[size_t(planned)].alive) {
      // the plan's schedule: per server, instances run in list order
      bool earlier = false;
      for (size_t j = 0; j < i; ++j)
        if (runs_[j].state == 0 && plan_.instances[j].server == planned && sv_[size_t(planned)].alive) { earlier = true; break; }
      if (!earlier && placeable(planned, int(i))) begin(int(i), planned);
      continue;
    }
    // locality-aware: the live, free, schedulable server where most predecessors ran
    int best = -1, best_score = -1;
    for (int s = 0; s < P.servers; ++s) {
      if (!placeable(s, int(i))) continue;
      int score = 0;
      for (int d : plan_.instances[i].deps) score += runs_[size_t(d)].server == s;
      if (score > best_score) { best = s; best_score = score; }
    }
    if (best < 0) best = preempt_for(int(i));
    if (best >= 0) begin(int(i), best);
  }
  scheduling_ = false;
}

uint32_t System::rank(int obj, uint32_t ver) const {
  auto it = rank_[size_t(obj)].find(ver);
  return it == rank_[size_t(obj)].end() ? 0 : it->second;
}

// A commit of obj wakes the gets held for it (no polling); each is served by the same path as a
// get, through the directory.
void System::release(int obj) {
  for (size_t k = 0; k < holds_.size();) {
    if (holds_[k].obj != obj || holds_[k].need > commits_[size_t(obj)]) { ++k; continue; }
    Hold h = holds_[k];
    holds_.erase(holds_.begin() + long(k));
    R.hold_wait_ns += now() - h.t0;
    at(now() + ms_ns(P.osc_cycles), [this, h] { serve(h.s, h.obj, h.n, h.vp, h.done, h.z, h.need); });
  }
}

// The reader's held gets go with it (its server died, or its function was stopped).
void System::drop_holds(int s) {
  holds_.erase(std::remove_if(holds_.begin(), holds_.end(), [s](const Hold& h) { return h.s == s; }), holds_.end());
}

void System::fail_server(int s) {
  Server& x = sv_[size_t(s)];
  if (!x.alive) return;
  x.alive = false;
  x.held.clear();
  drop_holds(s);
  B.failed(s);
  if (x.running >= 0) {  // the function dies with its server and is re-executed elsewhere
    auto& r = runs_[size_t(x.running)];
    r.state = 0; ++r.gen; r.put_wait = false; r.ready_at = -1; r.restarting = true;  // invoked again
    x.running = -1;
  }
  if (dir_) {  // the failure detector fences the server; its owed acks are retired
    uint32_t ep = x.epoch;
    at(now() + P.fd_timeout_ns, [this, s, ep] { dir_->fence(s, ep); schedule(); });
  }
  schedule();
}

}  // namespace apta
