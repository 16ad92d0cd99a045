#include "model.hpp"

// schema/params.json of the source tree, named by the build (CMakeLists.txt, gem5/SConscript)
#ifndef APTA_SCHEMA_PARAMS
#error "APTA_SCHEMA_PARAMS must name schema/params.json"
#endif

#include <algorithm>
#include <map>
#include <stdexcept>

namespace apta {

// ---------------------------------------------------------------------------------------------
// parameters, configurations, plans, scenarios

static double pval(const json::Value& root, const std::string& sec, const std::string& key) {
  return root.at(sec).at(key, sec).at("value", sec + "." + key).num(sec + "." + key + ".value");
}

// An entry {"schema": NAME} takes its value from schema/params.json, the RTL's defaults: the
// protocol engine's geometry and limits are the hardware's, defined once.
static void resolve_schema_refs(json::Value& root, const std::string& path) {
  json::Value schema;
  bool loaded = false;
  std::vector<std::string> secs;
  for (auto& [sec, v] : root.obj(path)) if (v.is_obj()) secs.push_back(sec);
  for (auto& sec : secs) {
    std::vector<std::string> keys;
    for (auto& [key, v] : root.at(sec).obj(sec)) if (v.has("schema")) keys.push_back(key);
    for (auto& key : keys) {
      if (!loaded) { schema = json::parse_file(APTA_SCHEMA_PARAMS); loaded = true; }
      const std::string& name = root.at(sec).at(key).at("schema").str(path + ": " + sec + "." + key + ".schema");
      const auto& ps = schema.at("parameters", APTA_SCHEMA_PARAMS);
      if (!ps.has(name))
        throw std::runtime_error(path + ": " + sec + "." + key + ": schema parameter '" + name + "' is not in " +
                                 APTA_SCHEMA_PARAMS);
      root[sec][key]["value"] = ps.at(name).at("default", name).num(name + ".default");
    }
  }
}

Params Params::load(const std::string& path, const json::Value& overrides) {
  json::Value root = json::parse_file(path);
  resolve_schema_refs(root, path);
  for (auto& [k, v] : overrides.obj("overrides")) {
    auto dot = k.find('.');
    if (dot == std::string::npos) throw std::runtime_error("overrides: key '" + k + "' must be section.parameter");
    std::string sec = k.substr(0, dot), key = k.substr(dot + 1);
    if (!root.has(sec) || !root.at(sec).has(key)) throw std::runtime_error("overrides: unknown parameter '" + k + "' (not in " + path + ")");
    root[sec][key]["value"] = v;
  }
  Params p;
  try {
    p.servers = int(pval(root, "compute", "servers"));
    p.clock_ghz = pval(root, "compute", "clock_ghz");
    p.cpi = pval(root, "compute", "cpi_int_fp");
    p.line = unsigned(pval(root, "compute", "line_bytes"));
    p.l1_bytes = uint64_t(pval(root, "compute", "l1_kb")) * 1024;
    p.l1_ways = unsigned(pval(root, "compute", "l1_ways"));
    p.l1_lat = unsigned(pval(root, "compute", "l1_latency_cycles"));
    p.l2_bytes = uint64_t(pval(root, "compute", "l2_kb")) * 1024;
    p.l2_ways = unsigned(pval(root, "compute", "l2_ways"));
    p.l2_lat = unsigned(pval(root, "compute", "l2_latency_cycles"));
    p.l2_bytes_per_cycle = pval(root, "compute", "l2_bytes_per_cycle");
    p.mshrs = unsigned(pval(root, "compute", "mshrs"));
    p.dram_lat_ns = pval(root, "dram", "latency_ns");
    p.dram_gbps = pval(root, "dram", "bandwidth_gbps");
    p.dram_ctrl_ns = pval(root, "dram", "controller_ns");
    p.dram_tccd_l_ns = pval(root, "dram", "tccd_l_ns");
    p.ms_clock_ghz = pval(root, "memory_server", "clock_ghz");
    p.otc_cycles = pval(root, "memory_server", "otc_lookup_cycles");
    p.osc_cycles = pval(root, "memory_server", "osc_translate_cycles");
    p.dir_sets = int(pval(root, "memory_server", "dir_sets"));
    p.dir_ways = int(pval(root, "memory_server", "dir_ways"));
    p.max_pend = int(pval(root, "memory_server", "max_pend_per_server"));
    p.stall_retry_ns = pval(root, "memory_server", "stall_retry_ns");
    p.hold_slots = int(pval(root, "memory_server", "hold_slots"));
    p.dm_lat_ns = pval(root, "links", "dm_latency_ns");
    p.dm_gbps = pval(root, "links", "dm_bandwidth_gbps");
    p.rdma_lat_ns = pval(root, "links", "rdma_latency_ns");
    p.rdma_gbps = pval(root, "links", "rdma_bandwidth_gbps");
    p.flit_bytes = pval(root, "links", "flit_bytes");
    p.jitter_cv = pval(root, "links", "jitter_cv");
    p.jitter_corr_ns = pval(root, "links", "jitter_corr_us") * 1000;
    p.sw_factor = pval(root, "software", "rdma_sw_factor");
    p.sw_call_ns = pval(root, "software", "rdma_ft_call_us") * 1000;
    p.inv_handler_ns = pval(root, "software", "inv_handler_us") * 1000;
    p.invoke_ns = pval(root, "software", "invoke_us") * 1000;
    for (auto& s : root.at("software").at("redo_log_stages", "software").at("value").arr("software.redo_log_stages")) {
      std::string k = s.str("software.redo_log_stages[]");
      if (k != "log" && k != "flag" && k != "apply" && k != "clear")
        throw json::Error("software.redo_log_stages: unknown stage '" + k + "' (log, flag, apply, clear)");
      p.log_stages.push_back(k);
    }
    p.fd_timeout_ns = pval(root, "faults", "fd_timeout_us") * 1000;
    const auto& t = root.at("faults").at("cxl_inv_timeout_us", "faults").at("value");
    p.cxl_inv_timeout_ns = t.is_null() ? -1 : t.num("faults.cxl_inv_timeout_us") * 1000;
    p.configs = root.at("configs");
  } catch (const json::Error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  if (p.servers < 1 || p.servers > 64) throw std::runtime_error(path + ": compute.servers: must be 1..64");
  if (p.hold_slots < 1) throw std::runtime_error(path + ": memory_server.hold_slots: must be at least 1");
  if (p.invoke_ns < 0) throw std::runtime_error(path + ": software.invoke_us: must not be negative");
  return p;
}

Config Config::from(const Params& p, const std::string& name) {
  if (!p.configs.has(name) || name == "about") {
    std::string known;
    for (auto& [k, v] : p.configs.obj()) if (k != "about") known += (known.empty() ? "" : ", ") + k;
    throw std::runtime_error("unknown configuration '" + name + "' (known: " + known + ")");
  }
  const auto& c = p.configs.at(name);
  std::string w = "configs." + name;
  Config k;
  k.name = name;
  k.label = c.at("label", w).str();
  k.rdma_link = c.at("link", w).str() == "rdma";
  k.line_gran = c.at("gran", w).str() == "line";
  k.sw = c.at("sw", w).boolean();
  const std::string& cache = c.at("cache", w).str();
  k.cache = cache == "none" ? Caching::None : cache == "version" ? Caching::Version : cache == "async" ? Caching::Async
          : cache == "sync" ? Caching::Sync : throw std::runtime_error(w + ".cache: unknown '" + cache + "'");
  const std::string inv = c.has("invoke") ? c.at("invoke", w).str() : "after";
  if (inv != "after" && inv != "early") throw std::runtime_error(w + ".invoke: unknown '" + inv + "' (after, early)");
  k.early = inv == "early";
  if (k.early && (k.cache != Caching::Async || k.line_gran))
    throw std::runtime_error(w + ".invoke: early (dataflow) needs object-granular Apta caching (cache async, gran object)");
  return k;
}

Plan Plan::load(const std::string& path, unsigned line_bytes, TraceSource src) {
  json::Value v = json::parse_file(path);
  Plan p;
  try {
    p.app = v.at("app").str("app");
    const auto& objs = v.at("objects").arr("objects");
    std::map<std::string, int> id;
    for (size_t k = 0; k < objs.size(); ++k) {
      p.objects.push_back(objs[k].str("objects[" + std::to_string(k) + "]"));
      id[p.objects.back()] = int(k);
    }
    p.object_bytes.assign(p.objects.size(), 0);
    const auto& insts = v.at("instances").arr("instances");
    for (size_t i = 0; i < insts.size(); ++i) {
      std::string w = "instances[" + std::to_string(i) + "]";
      const auto& j = insts[i];
      PlanInstance pi;
      pi.function = j.at("function", w).str(w + ".function");
      pi.index = int(j.at("index", w).integer(w + ".index"));
      pi.server = int(j.at("server", w).integer(w + ".server"));
      pi.trace_dir = j.at("trace", w).str(w + ".trace");
      for (auto& d : j.at("deps", w).arr(w + ".deps")) {
        long long x = d.integer(w + ".deps[]");
        if (x < 0 || x >= (long long)i) throw json::Error(w + ".deps: " + std::to_string(x) + " is not an earlier instance");
        pi.deps.push_back(int(x));
      }
      for (const char* k : {"reads", "writes"}) {
        for (auto& o : j.at(k, w).arr(w + "." + k)) {
          const std::string& n = o.str(w + "." + k + "[]");
          if (!id.count(n)) throw json::Error(w + "." + k + ": unknown object '" + n + "'");
          (std::string(k) == "reads" ? pi.reads : pi.writes).push_back(id[n]);
        }
      }
      p.instances.push_back(pi);
    }
  } catch (const json::Error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  for (auto& pi : p.instances) {
    p.traces.push_back(load_trace(pi.trace_dir, line_bytes, src));
    auto& t = p.traces.back();
    // every object the plan says this instance gets/puts must be marked in its trace
    for (int pass = 0; pass < 2; ++pass) {
      for (int o : pass ? pi.writes : pi.reads) {
        const std::string& name = p.objects[size_t(o)];
        const char* kind = pass ? "put" : "get";
        auto it = std::find_if(t.objects.begin(), t.objects.end(), [&](const TraceObject& x) { return x.name == name && x.kind == kind; });
        if (it == t.objects.end())
          throw std::runtime_error(pi.trace_dir + "/meta.json: objects: no '" + kind + "' of object '" + name + "' that the workflow declares");
        p.object_bytes[size_t(o)] = std::max(p.object_bytes[size_t(o)], it->len);
      }
    }
    for (auto& to : t.objects)
      if (std::find(p.objects.begin(), p.objects.end(), to.name) == p.objects.end())
        throw std::runtime_error(pi.trace_dir + "/meta.json: objects: object '" + to.name + "' is not in the workflow");
  }
  return p;
}

Scenario Scenario::from(const json::Value& v, const std::string& w) {
  Scenario s;
  s.name = v.at("name", w).str(w + ".name");
  s.config = v.at("config", w).str(w + ".config");
  if (v.has("overrides")) { s.overrides = v.at("overrides"); s.overrides.obj(w + ".overrides"); }
  if (v.has("jitter")) s.jitter = v.at("jitter").boolean(w + ".jitter");
  if (v.has("jitter_mode")) {
    s.jitter_mode = v.at("jitter_mode").str(w + ".jitter_mode");
    if (s.jitter_mode != "message" && s.jitter_mode != "operation" && s.jitter_mode != "correlated")
      throw std::runtime_error(w + ".jitter_mode: 'message', 'operation' or 'correlated', got '" + s.jitter_mode + "'");
  }
  if (v.has("seed")) s.seed = uint64_t(v.at("seed").integer(w + ".seed"));
  if (v.has("scheduler")) {
    const std::string& k = v.at("scheduler").str(w + ".scheduler");
    if (k != "plan" && k != "locality") throw std::runtime_error(w + ".scheduler: 'plan' or 'locality', got '" + k + "'");
    s.locality = k == "locality";
  }
  if (v.has("rule")) s.rule = v.at("rule").boolean(w + ".rule");
  if (v.has("mutant")) {
    s.mutant = v.at("mutant").str(w + ".mutant");
    if (s.mutant != "release_early" && s.mutant != "hit_ignores_version" && s.mutant != "no_put_gate")
      throw std::runtime_error(w + ".mutant: 'release_early', 'hit_ignores_version' or 'no_put_gate', got '" + s.mutant + "'");
  }
  if (v.has("horizon_ns")) s.horizon_ns = v.at("horizon_ns").num(w + ".horizon_ns");
  if (v.has("failures"))
    for (auto& f : v.at("failures").arr(w + ".failures"))
      s.failures.push_back(Failure{int(f.at("server", w + ".failures[]").integer()), f.at("at_ns", w + ".failures[]").num()});
  return s;
}

json::Value RunResult::to_json(const Plan& plan) const {
  json::Value o = json::Value::object();
  o["name"] = sc.name;
  o["config"] = sc.config;
  o["overrides"] = sc.overrides;
  o["jitter"] = sc.jitter;
  o["jitter_mode"] = sc.jitter_mode;
  o["seed"] = (long long)sc.seed;
  o["scheduler"] = sc.locality ? "locality" : "plan";
  o["rule"] = sc.rule;
  o["completed"] = completed;
  o["stall"] = stall.empty() ? json::Value() : json::Value(stall);
  o["makespan_ns"] = completed ? json::Value(makespan_ns) : json::Value();
  o["get_ns"] = get_ns;
  o["put_ns"] = put_ns;
  o["compute_ns"] = compute_ns;
  json::Value t = json::Value::object();
  t["gets"]["hit"] = gets_hit;
  t["gets"]["miss"] = gets_miss;
  t["puts"]["no_inv"] = puts_no_inv;
  t["puts"]["inv"] = puts_inv;
  o["table_iv"] = t;
  json::Value to = json::Value::object();
  to["gets"]["hit"] = obj_gets_hit;
  to["gets"]["miss"] = obj_gets_miss;
  to["puts"]["no_inv"] = obj_puts_no_inv;
  to["puts"]["inv"] = obj_puts_inv;
  o["table_iv_objects"] = to;
  o["trace_events"] = (long long)events;
  o["line_accesses"] = (long long)line_accesses;
  o["l1_hits"] = (long long)l1_hits;
  o["l1_misses"] = (long long)l1_misses;
  o["l2_misses"] = (long long)dram_lines;
  o["messages"] = (long long)messages;
  o["sim_events"] = (long long)sim_events;
  o["stale_reads"] = (long long)stale_reads;
  o["inv_timeouts"] = (long long)inv_timeouts;
  o["held_gets"] = (long long)held_gets;
  o["hold_wait_ns"] = hold_wait_ns;
  o["get_retries"] = (long long)get_retries;
  o["preemptions"] = (long long)preemptions;
  o["version_violations"] = (long long)version_violations;
  o["dag_violations"] = (long long)dag_violations;
  if (!sc.mutant.empty()) o["mutant"] = sc.mutant;
  if (sc.jitter) {
    json::Value j = json::Value::object();
    j["messages"] = (long long)jitter_messages;
    j["draws"] = (long long)jitter_draws;
    j["mean"] = jitter_mean;
    j["cv"] = jitter_cv;
    j["lag1"] = jitter_lag1;
    o["jitter_stats"] = j;
  }
  o["wall_s"] = wall_s;
  o["replay_s"] = replay_s;
  json::Value arr = json::Value::array();
  for (size_t i = 0; i < inst.size(); ++i) {
    const auto& r = inst[i];
    json::Value x = json::Value::object();
    x["function"] = plan.instances[i].function;
    x["index"] = plan.instances[i].index;
    x["server"] = r.server >= 0 ? json::Value("c" + std::to_string(r.server + 1)) : json::Value();
    x["start_ns"] = r.start;
    x["end_ns"] = r.end;
    x["get_ns"] = r.get_ns;
    x["compute_ns"] = r.compute_ns;
    x["put_ns"] = r.put_ns;
    x["get_hit"] = r.has_get ? json::Value(r.get_hit) : json::Value();
    x["put_inv"] = r.has_put ? json::Value(r.put_inv) : json::Value();
    x["restarts"] = r.restarts;
    x["early"] = r.early;
    arr.push(x);
  }
  o["instances"] = arr;
  return o;
}

}  // namespace apta
