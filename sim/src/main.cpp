// apta-sim: the trace-replay simulator's command line (sim/README.md).
//   apta-sim --plan PLAN --scenarios SC [--params sim/params.json] --out RESULTS [--quiet]
//   apta-sim --replay-vectors build/vectors/<cfg>.jsonl [--mutant sa_get_to_s]
//   apta-sim --check-trace DIR          (parse one trace directory, print its statistics)
//   apta-sim --cache-traces ROOT        (write the binary trace cache of every trace directory under ROOT)
//   --trace-source auto|text|cache      (where the traces' events come from: trace.hpp TraceSource)
#ifndef APTA_DEFAULT_PARAMS
#define APTA_DEFAULT_PARAMS "sim/params.json"
#endif
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "json.hpp"
#include "sim.hpp"
#include "vectors.hpp"

using namespace apta;

// results are written to a temporary file and renamed: a reader never sees half a file
static void write_atomic(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw std::runtime_error(path + ": cannot write");
    f << text;
    if (!f.flush()) { std::remove(tmp.c_str()); throw std::runtime_error(path + ": write failed"); }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) { std::remove(tmp.c_str()); throw std::runtime_error(path + ": rename failed"); }
}

// every trace directory (one with meta.json) under root, sorted
static void trace_dirs(const std::string& root, std::vector<std::string>& out) {
  struct stat st;
  if (stat((root + "/meta.json").c_str(), &st) == 0) { out.push_back(root); return; }
  DIR* d = opendir(root.c_str());
  if (!d) return;
  std::vector<std::string> subs;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == ".." || n[0] == '.') continue;  // .run: the tracer's scratch
    if (stat((root + "/" + n).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) subs.push_back(root + "/" + n);
  }
  closedir(d);
  std::sort(subs.begin(), subs.end());
  for (auto& s : subs) trace_dirs(s, out);
}

static double cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

static int usage() {
  std::cerr << "usage: apta-sim --plan PLAN.json --scenarios SCENARIOS.json --out RESULTS.json [--params sim/params.json] [--quiet]\n"
               "       apta-sim --replay-vectors VECTORS.jsonl [--mutant sa_get_to_s|put_waits_acks|ack_old_epoch]\n"
               "       apta-sim --check-trace TRACE_DIR [--params sim/params.json]\n"
               "       apta-sim --cache-traces TRACE_ROOT [--params sim/params.json]\n"
               "  --trace-source auto|text|cache   the binary trace cache if valid (auto), never, or only\n";
  return 2;
}

int main(int argc, char** argv) {
  std::string plan_path, sc_path, out_path, params_path = APTA_DEFAULT_PARAMS, vectors, mutant, check_dir, cache_root;
  TraceSource src = TraceSource::Auto;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) { std::cerr << "apta-sim: " << a << " needs a value\n"; exit(2); }
      return argv[++i];
    };
    if (a == "--plan") plan_path = val();
    else if (a == "--scenarios") sc_path = val();
    else if (a == "--out") out_path = val();
    else if (a == "--params") params_path = val();
    else if (a == "--replay-vectors") vectors = val();
    else if (a == "--mutant") mutant = val();
    else if (a == "--check-trace") check_dir = val();
    else if (a == "--cache-traces") cache_root = val();
    else if (a == "--trace-source") {
      try { src = trace_source_from(val()); } catch (const std::exception& e) { std::cerr << "apta-sim: " << e.what() << "\n"; return 2; }
    }
    else if (a == "--quiet") quiet = true;
    else return usage();
  }
  try {
    if (!vectors.empty()) {
      ReplayStats st = replay_vectors(vectors, parse_mutant(mutant), std::cerr);
      std::cout << "{\"vectors\": " << json::quote(vectors) << ", \"mutant\": " << json::quote(mutant.empty() ? "none" : mutant)
                << ", \"scenarios\": " << st.scenarios << ", \"steps\": " << st.steps << ", \"failed\": " << st.failed << "}\n";
      return st.failed ? 1 : 0;
    }
    if (!check_dir.empty()) {
      Params p = Params::load(params_path, json::Value::object());
      TraceInstance t = load_trace(check_dir, p.line, src);
      std::cout << "{\"dir\": " << json::quote(check_dir) << ", \"events\": " << t.events.size() << ", \"ranges\": " << t.ranges.size()
                << ", \"instructions\": " << t.instructions << ", \"objects\": " << t.objects.size()
                << ", \"source\": \"" << (t.from_cache ? "cache" : "text") << "\"}\n";
      return 0;
    }
    if (!cache_root.empty()) {
      Params p = Params::load(params_path, json::Value::object());
      std::vector<std::string> dirs;
      trace_dirs(cache_root, dirs);
      if (dirs.empty()) throw std::runtime_error(cache_root + ": no trace directory (none with meta.json) under it");
      auto t0 = std::chrono::steady_clock::now();
      size_t wrote = 0;
      for (auto& d : dirs) wrote += write_trace_cache(d, p.line);
      std::cout << "apta-sim: binary trace cache of " << dirs.size() << " trace directories under " << cache_root << ": " << wrote
                << " written, " << dirs.size() - wrote << " already current ("
                << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s)\n";
      return 0;
    }
    if (plan_path.empty() || sc_path.empty() || out_path.empty()) return usage();
    Params p0 = Params::load(params_path, json::Value::object());
    auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_s();
    Plan plan = Plan::load(plan_path, p0.line, src);
    double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double load_cpu_s = cpu_s() - c0;
    json::Value scs = json::parse_file(sc_path);
    std::vector<Scenario> list;
    const auto& arr = scs.at("scenarios").arr("scenarios");
    for (size_t k = 0; k < arr.size(); ++k) list.push_back(Scenario::from(arr[k], sc_path + ": scenarios[" + std::to_string(k) + "]"));
    json::Value out = json::Value::object();
    out["app"] = plan.app;
    out["params"] = params_path;
    out["trace_load_s"] = load_s;
    out["trace_load_cpu_s"] = load_cpu_s;  // this process's CPU time: robust when other jobs share the cores
    uint64_t ev = 0;
    for (auto& t : plan.traces) ev += t.events.size();
    out["trace_events"] = (long long)ev;
    long long cached = 0;
    for (auto& t : plan.traces) cached += t.from_cache;
    out["traces_from_cache"] = cached;
    json::Value res = json::Value::array();
    for (size_t k = 0; k < list.size(); ++k) {
      RunResult r = simulate(plan, params_path, list[k]);
      if (!quiet) {
        fprintf(stderr, "[%s %zu/%zu] %-14s %-28s %s %.1f us (%.2f s; replay %.1f M events/s)\n", plan.app.c_str(), k + 1, list.size(),
                list[k].config.c_str(), list[k].name.c_str(), r.completed ? "makespan" : "STALLED", r.makespan_ns / 1000,
                r.wall_s, r.replay_s > 0 ? r.events / r.replay_s / 1e6 : 0.0);
      }
      res.push(r.to_json(plan));
    }
    out["results"] = res;
    write_atomic(out_path, out.dump() + "\n");
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "apta-sim: error: " << e.what() << "\n";
    return 1;
  }
}
