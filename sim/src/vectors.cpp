#include "vectors.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "json.hpp"

namespace apta {

namespace {
struct Mismatch { std::string field, text; };

std::string snp_str(const Snp& s) {
  std::ostringstream o;
  o << "{server " << s.server << ", epoch " << s.epoch << ", obj " << s.obj << ", base " << s.base << ", size " << s.size << "}";
  return o.str();
}

void check_step(Directory& d, const json::Value& step, const json::Value& objects, int n, std::vector<Mismatch>& bad) {
  json::Value resp = json::Value::array(), ackr = json::Value::array(), ctrl = json::Value::array();
  std::vector<Snp> snps;
  for (auto& st : step.at("stimuli").arr()) {
    const std::string& port = st.at("port").str();
    int server = int(st.at("server").integer());
    uint32_t epoch = uint32_t(st.at("epoch").integer());
    if (port == "req") {
      const std::string& op = st.at("op").str();
      uint32_t obj = uint32_t(st.at("obj").integer());
      uint64_t base = uint64_t(st.at("base").integer());
      uint32_t size = uint32_t(st.at("size").integer());
      ReqOutcome o = op == "Get" ? d.get(server, epoch, obj, base, size) : d.commit(server, epoch, obj, base, size);
      json::Value r = json::Value::object();
      r["op"] = op; r["server"] = server; r["obj"] = (long long)obj; r["result"] = result_name(o.result);
      resp.push(r);
      snps.insert(snps.end(), o.snps.begin(), o.snps.end());
    } else if (port == "ack") {
      uint32_t obj = uint32_t(st.at("obj").integer());
      AckOutcome a = d.ack(server, epoch, obj);
      json::Value r = json::Value::object();
      r["server"] = server; r["obj"] = (long long)obj; r["applied"] = a.applied; r["settled"] = a.settled;
      ackr.push(r);
    } else {
      const std::string& op = st.at("op").str();
      json::Value r = json::Value::object();
      r["server"] = server;
      if (op == "Fence") { d.fence(server, epoch); r["op"] = "Fence"; r["epoch"] = (long long)epoch; }
      else { uint32_t e = d.rejoin(server); r["op"] = "RejoinAck"; r["epoch"] = (long long)e; }
      ctrl.push(r);
    }
  }
  const auto& ex = step.at("expect");
  // in-order ports: compare as canonical JSON
  for (auto [port, got] : {std::pair<const char*, json::Value*>{"resp", &resp}, {"ackResult", &ackr}, {"ctrlResp", &ctrl}}) {
    std::string want = ex.at(port).dump(), have = got->dump();
    if (want != have) bad.push_back({port, "expected " + want + ", got " + have});
  }
  // snp: a multiset
  std::vector<std::string> want, have;
  for (auto& m : ex.at("snp").arr())
    want.push_back(snp_str(Snp{int(m.at("server").integer()), uint32_t(m.at("epoch").integer()), uint32_t(m.at("obj").integer()),
                               uint64_t(m.at("base").integer()), uint32_t(m.at("size").integer())}));
  for (auto& s : snps) have.push_back(snp_str(s));
  std::sort(want.begin(), want.end());
  std::sort(have.begin(), have.end());
  if (want != have) {
    std::string a, b;
    for (auto& x : want) a += x + " ";
    for (auto& x : have) b += x + " ";
    bad.push_back({"snp", "expected [" + a + "], got [" + b + "]"});
  }
  // state: every object of the scenario, then fenced flags and epochs
  const auto& state = ex.at("state");
  for (auto& [name, o] : objects.obj()) {
    uint32_t obj = uint32_t(o.at("obj").integer());
    std::string key = std::to_string(obj);
    if (!state.at("objects").has(key)) continue;
    const auto& e = state.at("objects").at(key);
    std::string wst = e.at("state").str(), gst = state_name(d.state(obj));
    if (wst != gst) bad.push_back({"state.objects." + key + ".state", "expected " + wst + ", got " + gst});
    json::Value sh = json::Value::array(), pd = json::Value::array(), sf = json::Value::array();
    for (int s = 0; s < n; ++s) {
      if (d.sharers(obj) >> s & 1) sh.push(s);
      pd.push((long long)d.pend(obj, s));
      sf.push(!d.fenced(s) && d.pend(obj, s) == 0);   // CORE.md's queryResp.schedulableFor
    }
    if (e.at("schedulableFor").dump() != sf.dump())
      bad.push_back({"state.objects." + key + ".schedulableFor", "expected " + e.at("schedulableFor").dump() + ", got " + sf.dump()});
    if (e.at("sharers").dump() != sh.dump())
      bad.push_back({"state.objects." + key + ".sharers", "expected " + e.at("sharers").dump() + ", got " + sh.dump()});
    if (e.at("pend").dump() != pd.dump())
      bad.push_back({"state.objects." + key + ".pend", "expected " + e.at("pend").dump() + ", got " + pd.dump()});
  }
  json::Value fe = json::Value::array(), ep = json::Value::array(), pe = json::Value::array(), sc = json::Value::array();
  for (int s = 0; s < n; ++s) {
    fe.push(d.fenced(s));
    ep.push((long long)d.epoch(s));
    pe.push(d.owes_any(s));
    sc.push(d.schedulable(s));
  }
  if (state.at("pending").dump() != pe.dump()) bad.push_back({"state.pending", "expected " + state.at("pending").dump() + ", got " + pe.dump()});
  if (state.at("schedulable").dump() != sc.dump()) bad.push_back({"state.schedulable", "expected " + state.at("schedulable").dump() + ", got " + sc.dump()});
  if (state.at("fenced").dump() != fe.dump()) bad.push_back({"state.fenced", "expected " + state.at("fenced").dump() + ", got " + fe.dump()});
  if (state.at("epoch").dump() != ep.dump()) bad.push_back({"state.epoch", "expected " + state.at("epoch").dump() + ", got " + ep.dump()});
}
}  // namespace

ReplayStats replay_vectors(const std::string& path, Mutant m, std::ostream& err) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error(path + ": cannot read (run `make vectors`)");
  ReplayStats st;
  std::string line;
  int lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = path + ":" + std::to_string(lineno);
    json::Value sc;
    try {
      sc = json::parse(line, path);
      const auto& p = sc.at("params");
      int n = int(p.at("servers", "params").integer("params.servers"));
      Directory d(n, int(p.at("dirSets", "params").integer()), int(p.at("dirWays", "params").integer()),
                  int(p.at("maxPendPerServer", "params").integer()), m);
      ++st.scenarios;
      const auto& steps = sc.at("steps").arr("steps");
      bool ok = true;
      for (size_t k = 0; k < steps.size() && ok; ++k) {
        ++st.steps;
        std::vector<Mismatch> bad;
        check_step(d, steps[k], sc.at("objects"), n, bad);
        for (auto& b : bad)
          err << where << ": " << sc.at("id").str() << ": steps[" << k << "] (" << steps[k].at("rule").str() << "): "
              << b.field << ": " << b.text << "\n";
        ok = bad.empty();
      }
      if (!ok) ++st.failed;
    } catch (const json::Error& e) {
      std::string msg = e.what();
      throw std::runtime_error(msg.rfind(path, 0) == 0 ? msg : where + ": " + msg);
    }
  }
  return st;
}

}  // namespace apta
