// The API's calls on the RTL, on the RTL loop's thread: each queues its input (io_mapUpd, io_ctrl,
// io_cancel, io_query) and runs cycles until the answer shows; snapshot() reads the status of one
// instant for GET /v1/schedulable and /v1/objects/{obj}.
#include <cinttypes>

#include "VMemoryServer.h"
#include "daemon.h"

namespace apta_memd {

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

}  // namespace apta_memd
