// What both simulators share besides the trace loader and the protocol engine: the parameters
// (sim/params.json, schema references resolved), the seven configurations, a workflow's plan with
// its traces, a scenario, and the result of a run with its JSON form. apta-sim (sim.cpp) and the
// gem5 extension (gem5/) load and write these through this one file, so their inputs and results
// are the same documents.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "json.hpp"
#include "trace.hpp"

namespace apta {

struct Params {
  // compute (Table II)
  int servers;
  double clock_ghz, cpi;
  unsigned line;
  uint64_t l1_bytes, l2_bytes;
  unsigned l1_ways, l2_ways, l1_lat, l2_lat, mshrs;
  double l2_bytes_per_cycle;  // the L1-L2 data path: an event's L1 misses return at most this fast
  // DDR4
  double dram_lat_ns, dram_gbps, dram_ctrl_ns, dram_tccd_l_ns;
  // a line stream's period on one channel: its lines are columns of one bank group
  double dram_line_ns() const { return std::max(line * 8.0 / dram_gbps, dram_tccd_l_ns); }
  // memory server
  double ms_clock_ghz, otc_cycles, osc_cycles, stall_retry_ns;
  int dir_sets, dir_ways, max_pend;
  int hold_slots;  // the OSC's hold table: versioned gets waiting for their version
  // links
  double dm_lat_ns, dm_gbps, rdma_lat_ns, rdma_gbps, flit_bytes, jitter_cv, jitter_corr_ns;
  // software
  double sw_factor, sw_call_ns, inv_handler_ns;
  double invoke_ns;  // invocation path: from the trigger (placement decision) to the function's first instruction
  std::vector<std::string> log_stages;  // CXL atomic put: redo-log stages
  // faults
  double fd_timeout_ns, cxl_inv_timeout_ns;  // < 0: never
  json::Value configs;

  // Loads sim/params.json with "section.key" overrides (e.g. links.dm_latency_ns) applied first.
  static Params load(const std::string& path, const json::Value& overrides);
};

enum class Caching { None, Version, Async, Sync };

struct Config {
  std::string name, label;
  bool rdma_link, line_gran, sw;
  Caching cache;
  // Dataflow invocation: a function is triggered when its predecessors have started
  // (not finished); its gets name the version they need and the memory server holds them until
  // it commits. Only with object-granular Apta caching.
  bool early = false;
  static Config from(const Params& p, const std::string& name);
};

struct PlanInstance {
  std::string function;
  int index = 0;
  int server = 0;                  // 0-based (c1 = 0)
  std::vector<int> deps;           // instance ids that must finish first
  std::vector<int> reads, writes;  // object ids, in the order the function gets / puts them
  std::string trace_dir;
};

struct Plan {
  std::string app;
  std::vector<std::string> objects;     // id -> name
  std::vector<uint64_t> object_bytes;   // id -> size
  std::vector<PlanInstance> instances;  // list (schedule) order
  std::vector<TraceInstance> traces;    // per instance
  static Plan load(const std::string& path, unsigned line_bytes, TraceSource src = TraceSource::Auto);
};

struct Failure { int server; double at_ns; };

struct Scenario {
  std::string name, config;
  json::Value overrides = json::Value::object();
  bool jitter = false;
  std::string jitter_mode = "message";  // message | operation | correlated (system.hpp JitterMode)
  uint64_t seed = 1;
  bool locality = false;        // locality-aware scheduler instead of the plan's servers
  bool rule = true;             // pending-invalidation rule (async configurations)
  std::vector<Failure> failures;
  double horizon_ns = 1e12;     // stop after this much simulated time (a stall is reported)
  // a deliberately wrong dataflow, to show the checks have teeth (tests/test_sim.py): release_early
  // (the OSC serves a get whose version has not committed), hit_ignores_version (any cached copy
  // is a hit), no_put_gate (an early function puts before its predecessors finished)
  std::string mutant;
  static Scenario from(const json::Value& v, const std::string& where);
};

struct InstResult {
  int server = -1;
  double start = -1, end = -1, get_ns = 0, compute_ns = 0, put_ns = 0;
  bool get_hit = false, put_inv = false, has_get = false, has_put = false;
  // Table IV per object (each object got / put counts once; the last execution's, like get_hit/put_inv)
  int obj_get_hit = 0, obj_get_miss = 0, obj_put_no_inv = 0, obj_put_inv = 0;
  int restarts = 0;
  bool early = false;  // invoked before its predecessors finished (Config::early and its reads allow it)
};

struct RunResult {
  Scenario sc;
  bool completed = false;
  std::string stall;            // why the workflow did not finish
  double makespan_ns = 0, get_ns = 0, put_ns = 0, compute_ns = 0;
  int gets_hit = 0, gets_miss = 0, puts_no_inv = 0, puts_inv = 0;               // Table IV per function phase
  int obj_gets_hit = 0, obj_gets_miss = 0, obj_puts_no_inv = 0, obj_puts_inv = 0;  // Table IV per object
  uint64_t l1_hits = 0, l1_misses = 0, dram_lines = 0;  // compute-side replay (L2 misses go to DRAM)
  // jitter: messages jittered, latency draws, mean and std of latency/mean, lag-1 correlation on a channel
  uint64_t jitter_messages = 0, jitter_draws = 0;
  double jitter_mean = 0, jitter_cv = 0, jitter_lag1 = 0;
  uint64_t events = 0, line_accesses = 0, messages = 0, stale_reads = 0, sim_events = 0, inv_timeouts = 0;
  // dataflow (Config::early): gets held at the memory server, their summed wait there, GetRetry
  // answers (hold table full), early functions preempted for a re-execution, versioned gets that
  // returned a version older than they named (must stay 0)
  uint64_t held_gets = 0, get_retries = 0, preemptions = 0, version_violations = 0;
  uint64_t dag_violations = 0;  // a function read a version written by a function not before it in the DAG
  double hold_wait_ns = 0;
  double wall_s = 0, replay_s = 0;  // replay_s: CPU seconds in the L1/L2/DRAM replay loop
  std::vector<InstResult> inst;
  json::Value to_json(const Plan& plan) const;
};

}  // namespace apta
