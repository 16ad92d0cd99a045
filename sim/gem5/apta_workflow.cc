#include "apta_workflow.hh"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "base/logging.hh"
#include "json.hpp"
#include "sim/core.hh"
#include "sim/sim_exit.hh"

namespace gem5
{

namespace
{

double
wallNow()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // anonymous namespace

// Bad input (a malformed plan, scenario or parameter file) stops the run with the file and
// field named, before anything is simulated.
AptaWorkflow::AptaWorkflow(const Params &p)
    : SimObject(p), cores(p.cores), links(p.links), memServer(p.mem_server), packetLink(p.packet_link), replaying(p.cores.size(), false),
      streams(p.cores.size(), 0), arriving(p.cores.size()), streamed(p.cores.size()),
      crashes(p.cores.size(), 0)
{
    try {
        ::json::Value sc = ::json::parse(p.scenario, "scenario");
        scenario = ::apta::Scenario::from(sc, "scenario");
        ::apta::Params params = ::apta::Params::load(p.params_file, scenario.overrides);
        ::apta::Config config = ::apta::Config::from(params, scenario.config);
        plan = ::apta::Plan::load(p.plan, params.line);
        // CXL cached: the functions' loads reach the objects in the window; CXL uncached reads an
        // object into a local copy at its get (cxl_read_lines)
        if (config.line_gran && config.cache != ::apta::Caching::None && packetLink)
            objectHome = AptaCore::ObjectHome::CxlWindow;
        fatal_if(int(cores.size()) != params.servers || links.size() != cores.size(),
                 "%s: %d cores and %d links for %d compute servers (compute.servers in %s)", name(),
                 int(cores.size()), int(links.size()), params.servers, p.params_file);
        sys = std::make_unique<::apta::System>(plan, params, config, scenario, *this);
    } catch (const std::exception &e) {
        fatal("%s: %s", name(), e.what());
    }
}

void
AptaWorkflow::startup()
{
    SimObject::startup();
    memServer->layout(plan.object_bytes);
    for (auto *c : cores)
        c->setObjectHome(objectHome, [this](uint32_t obj, uint64_t line) { return memServer->lineAddr(obj, line); });
    wall0 = wallNow();
    sys->start();
    settle();
}

void
AptaWorkflow::settle()
{
    if (work == 0 && !ended) {
        ended = true;
        exitSimLoop("apta: stalled (nothing left to do)");
    }
}

Tick
AptaWorkflow::toTick(double ns) const
{
    return Tick(std::llround(ns * double(sim_clock::as_int::ns)));
}

double
AptaWorkflow::toNs(Tick t) const
{
    return double(t) / double(sim_clock::as_int::ns);
}

double
AptaWorkflow::now() const
{
    return toNs(curTick());
}

void
AptaWorkflow::at(double t, std::function<void()> fn)
{
    ++work;
    auto *ev = new EventFunctionWrapper([this, fn = std::move(fn)] { --work; fn(); settle(); },
                                        name() + ".at", true);
    schedule(ev, std::max(curTick(), toTick(t)));
}

void
AptaWorkflow::compute(int i, int s, ::apta::Phase ph, const ::apta::Slots &slots,
                      std::function<void(double)> done)
{
    const Tick t0 = curTick();
    ++work;
    replaying.at(size_t(s)) = true;
    cores.at(size_t(s))->replay(plan.traces.at(size_t(i)), i, ph, slots, [this, s, t0, done] {
        replaying[size_t(s)] = false;
        --work;
        done(toNs(curTick() - t0));
        settle();
    });
}

void
AptaWorkflow::ms_dram(double t, uint32_t obj, uint64_t first_line, uint64_t lines, bool write,
                      std::function<void(double, double)> done)
{
    at(t, [this, obj, first_line, lines, write, done] {
        std::function<void(Tick, Tick)> cb;
        if (done) {
            ++work;
            cb = [this, done](Tick first, Tick last) { --work; done(toNs(first), toNs(last)); settle(); };
        }
        memServer->access(obj, first_line, lines, write, cb);
    });
}

void
AptaWorkflow::install(int s, uint32_t obj, uint32_t ver, uint64_t lines)
{
    // in CXL cached an object is never copied: its lines are read where they live
    Arrival &a = streamed.at(size_t(s));
    const bool done = a.set && a.obj == obj && a.ver == ver;
    a = arriving.at(size_t(s)) = Arrival{};
    if (objectHome == AptaCore::ObjectHome::Local && !done)
        cores.at(size_t(s))->fill(obj, ver, 0, lines);
}

void
AptaWorkflow::data_arriving(int s, uint32_t obj, uint32_t ver, uint64_t lines)
{
    if (packetLink && objectHome == AptaCore::ObjectHome::Local)
        arriving.at(size_t(s)) = Arrival{obj, ver, lines, true};
}

bool
AptaWorkflow::link_message(int s, bool up, ::apta::MsgKind k, uint64_t flits, double not_before, double min_end,
                           std::function<void()> fn)
{
    if (!packetLink)
        return false;
    using C = AptaCxlLink::Channel;
    C c;
    switch (k) {
      case ::apta::MsgKind::Request: c = up ? C::M2SReq : C::S2MNDR; break;
      case ::apta::MsgKind::Data: c = up ? C::M2SRwD : C::S2MDRS; break;
      case ::apta::MsgKind::Ack: c = up ? C::M2SReq : C::S2MNDR; break;
      case ::apta::MsgKind::Snoop: c = C::S2MBISnp; break;
      case ::apta::MsgKind::SnoopAck: c = C::M2SBIRsp; break;
      default: panic("%s: unknown message kind", name());
    }
    panic_if((k == ::apta::MsgKind::Snoop && up) || (k == ::apta::MsgKind::SnoopAck && !up),
             "%s: a snoop goes down, its answer up", name());
    // an object's data: its lines go into the LLC as they stream in, as the GET controller
    // writes them (§III-D1), not after the last one
    std::function<void(uint64_t, uint64_t)> piece;
    Arrival &a = arriving.at(size_t(s));
    if (a.set && k == ::apta::MsgKind::Data && !up) {
        piece = [this, s, a, life = crashes[size_t(s)]](uint64_t first, uint64_t n) {
            if (life == crashes[size_t(s)] && first < a.lines)
                cores[size_t(s)]->fill(a.obj, a.ver, first, std::min(n, a.lines - first));
        };
        streamed[size_t(s)] = a;
        a = Arrival{};
    }
    ++work;
    links.at(size_t(s))->message(c, flits, toTick(not_before), toTick(min_end), [this, fn = std::move(fn)] {
        --work;
        fn();
        settle();
    }, std::move(piece));
    return true;
}

bool
AptaWorkflow::flush_copy(int s, uint32_t obj, uint32_t ver, uint64_t lines, std::function<void()> done)
{
    if (objectHome != AptaCore::ObjectHome::Local)
        return false;  // CXL: the copy is the window's lines, snooped by the memory server
    ++work;
    ++streams.at(size_t(s));
    cores.at(size_t(s))->flushCopy(obj, ver, lines, [this, s, done = std::move(done)] {
        --streams[size_t(s)];
        --work;
        done();
        settle();
    });
    return true;
}

void
AptaWorkflow::cxl_write_lines(int s, uint32_t obj, uint32_t ver, uint64_t first_line, uint64_t n,
                              std::function<void()> done)
{
    ++work;
    ++streams.at(size_t(s));
    cores[size_t(s)]->writeThrough(
        [this, obj, first_line](uint64_t k) { return memServer->lineAddr(obj, first_line + k); }, n,
        obj == ::apta::kRedoLog ? 0 : AptaCore::stamp(obj, ver),
        [this, s, done = std::move(done)] {
            --streams[size_t(s)];
            --work;
            done();
            settle();
        });
}

void
AptaWorkflow::cxl_read_lines(int s, uint32_t obj, uint32_t ver, uint64_t n, std::function<void()> done)
{
    ++work;
    ++streams.at(size_t(s));
    cores[size_t(s)]->readThrough([this, obj](uint64_t k) { return memServer->lineAddr(obj, k); }, n,
                                  AptaCore::stamp(obj, ver), [this, s, done = std::move(done)] {
                                      --streams[size_t(s)];
                                      --work;
                                      done();
                                      settle();
                                  });
}

void
AptaWorkflow::cxl_back_invalidate(int x, uint32_t obj, uint64_t n, std::function<void()> done)
{
    ++work;
    memServer->backInvalidate(x, obj, n, [this, done = std::move(done)] {
        --work;
        done();
        settle();
    });
}

void
AptaWorkflow::failed(int s)
{
    cores.at(size_t(s))->abort();
    ++crashes.at(size_t(s));
    if (replaying.at(size_t(s))) {  // its phase's completion will never come
        replaying[size_t(s)] = false;
        --work;
    }
    work -= streams.at(size_t(s));  // nor its streams' completions
    streams[size_t(s)] = 0;
}

void
AptaWorkflow::finished()
{
    ended = true;
    exitSimLoop("apta: workflow finished");
}

bool
AptaWorkflow::writeResult(const std::string &path)
{
    ::apta::RunResult &r = sys->finish();
    r.wall_s = wallNow() - wall0;
    r.events = r.line_accesses = 0;
    long long checked = 0, stale = 0;
    for (auto *c : cores) {
        r.events += c->eventsReplayed();
        r.line_accesses += c->lineAccesses();
        checked += (long long)c->checkedLines();
        stale += (long long)c->staleLines();
    }
    ::json::Value o = r.to_json(plan);
    // the CXL window's reads checked against the versions got, and how many were stale
    o["gem5_checked_lines"] = checked;
    o["gem5_stale_lines"] = stale;
    o["simulator"] = "gem5";
    o["app"] = plan.app;
    o["sim_ticks"] = (long long)curTick();
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary);
        if (!(f << o.dump() << "\n")) {
            warn("%s: cannot write %s", name(), tmp);
            return false;
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        warn("%s: cannot rename %s", name(), tmp);
        return false;
    }
    return r.completed;
}

} // namespace gem5
