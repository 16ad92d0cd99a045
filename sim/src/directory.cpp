#include "directory.hpp"

#include "apta_enums.h"  // generated from schema/core.json (CMakeLists.txt)

#include <stdexcept>

namespace apta {

// the enums' order is the ports' encoding, defined once in schema/core.json
static_assert(int(DirState::I) == APTA_DIR_STATE_I && int(DirState::S) == APTA_DIR_STATE_S &&
              int(DirState::SA) == APTA_DIR_STATE_SA && int(DirState::SI) == APTA_DIR_STATE_SI &&
              APTA_DIR_STATE_COUNT == 4, "DirState differs from schema/core.json");
static_assert(int(Result::Served) == APTA_REQ_RESULT_SERVED && int(Result::Committed) == APTA_REQ_RESULT_COMMITTED &&
              int(Result::Stall) == APTA_REQ_RESULT_STALL && int(Result::Drop) == APTA_REQ_RESULT_DROP &&
              APTA_REQ_RESULT_COUNT == 4, "Result differs from schema/core.json");

const char* state_name(DirState s) { return APTA_DIR_STATE_NAME[int(s)]; }
const char* result_name(Result r) { return APTA_REQ_RESULT_NAME[int(r)]; }

Mutant parse_mutant(const std::string& s) {
  if (s.empty() || s == "none") return Mutant::None;
  if (s == "sa_get_to_s") return Mutant::SaGetToS;
  if (s == "put_waits_acks") return Mutant::PutWaitsAcks;
  if (s == "ack_old_epoch") return Mutant::AckOldEpoch;
  throw std::runtime_error("--mutant: unknown mutant '" + s + "' (known: sa_get_to_s, put_waits_acks, ack_old_epoch)");
}

Directory::Directory(int servers, int sets, int ways, int max_pend, Mutant m)
    : n_(servers), sets_(sets), ways_(ways), max_pend_(max_pend), mut_(m),
      dir_(size_t(sets) * ways), fenced_(servers, false), epoch_(servers, 0), owed_(servers, 0) {
  if (servers < 1 || servers > 64) throw std::runtime_error("directory: servers must be 1..64");
  for (auto& e : dir_) e.pend.assign(n_, 0);
}

Entry* Directory::lookup(uint32_t obj) {
  Entry* set = &dir_[size_t(obj % sets_) * ways_];  // set index = obj % dirSets (rtl/CORE.md)
  for (int w = 0; w < ways_; ++w)
    if (set[w].valid && set[w].obj == obj) return &set[w];
  return nullptr;
}
const Entry* Directory::find(uint32_t obj) const { return const_cast<Directory*>(this)->lookup(obj); }
DirState Directory::state(uint32_t obj) const { auto e = find(obj); return e ? e->st : DirState::I; }
uint64_t Directory::sharers(uint32_t obj) const { auto e = find(obj); return e ? e->sharers : 0; }
uint32_t Directory::pend(uint32_t obj, int s) const { auto e = find(obj); return e ? e->pend[s] : 0; }

bool Directory::any_pend(const Entry& e) const {
  for (auto p : e.pend) if (p) return true;
  return false;
}

void Directory::settle(Entry& e) {
  if (any_pend(e)) return;
  if (e.st == DirState::SA) e.st = DirState::S;
  else if (e.st == DirState::SI) { e = Entry{}; e.pend.assign(n_, 0); }  // entry freed
}

void Directory::invalidate(Entry& e, uint64_t servers, std::vector<Snp>& snps) {
  for (int x = 0; x < n_; ++x) {
    if (!(servers >> x & 1)) continue;
    e.pend[x] += 1;
    owed_[x] += 1;
    // base/size: the extent stored before a commit replaces it (the invalidated version's)
    snps.push_back(Snp{x, epoch_[x], e.obj, e.base, e.size});
  }
}

Entry* Directory::allocate(uint32_t obj, ReqOutcome& out, const char* kind) {
  Entry* set = &dir_[size_t(obj % sets_) * ways_];
  for (int w = 0; w < ways_; ++w)
    if (!set[w].valid) return &set[w];
  // Set full: victim = lowest way in S without sharers, else lowest way in S ("cold shared
  // first"); S^A and SI are never victims. Either way this request stalls and is retried.
  Entry* victim = nullptr;
  for (int w = 0; w < ways_ && !victim; ++w)
    if (set[w].st == DirState::S && !set[w].sharers) victim = &set[w];
  for (int w = 0; w < ways_ && !victim; ++w)
    if (set[w].st == DirState::S) victim = &set[w];
  out.result = Result::Stall;
  if (!victim) { out.cell = std::string(kind) + ".I.full"; return nullptr; }
  out.cell = std::string(kind) + ".I.evict";
  if (!victim->sharers) {
    *victim = Entry{};
    victim->pend.assign(n_, 0);
  } else {
    invalidate(*victim, victim->sharers, out.snps);
    victim->sharers = 0;
    victim->st = DirState::SI;
  }
  return nullptr;
}

ReqOutcome Directory::get(int c, uint32_t ep, uint32_t obj, uint64_t base, uint32_t size) {
  ReqOutcome out{Result::Stall, "", {}};
  if (zombie(c, ep)) { out.result = Result::Drop; out.cell = "get.zombie"; return out; }
  Entry* e = lookup(obj);
  if (e && e->st == DirState::SI) { out.cell = "get.SI"; return out; }
  // c still owes an ack for obj: its own ObjBIRsp is on the way; waiting bounds the counters
  if (e && e->pend[c] > 0) { out.cell = "get.owes"; return out; }
  if (!e) {
    e = allocate(obj, out, "get");
    if (!e) return out;
    e->valid = true; e->obj = obj; e->st = DirState::S; e->sharers = 1ull << c;
    e->base = base; e->size = size;
    out.result = Result::Served; out.cell = "get.I.alloc";
    return out;
  }
  out.result = Result::Served;
  out.cell = e->st == DirState::S ? "get.S" : "get.SA";
  e->sharers |= 1ull << c;
  if (mut_ == Mutant::SaGetToS && e->st == DirState::SA) e->st = DirState::S;
  return out;
}

ReqOutcome Directory::commit(int w, uint32_t ep, uint32_t obj, uint64_t base, uint32_t size) {
  ReqOutcome out{Result::Stall, "", {}};
  if (zombie(w, ep)) { out.result = Result::Drop; out.cell = "commit.zombie"; return out; }
  Entry* e = lookup(obj);
  if (e && e->st == DirState::SI) { out.cell = "commit.SI"; return out; }
  if (!e) {
    e = allocate(obj, out, "commit");
    if (!e) return out;
    e->valid = true; e->obj = obj; e->st = DirState::S; e->sharers = 1ull << w;
    e->base = base; e->size = size;
    out.result = Result::Committed; out.cell = "commit.I.alloc";
    return out;
  }
  if (mut_ == Mutant::PutWaitsAcks && e->st == DirState::SA) { out.cell = "commit.SA"; return out; }
  uint64_t others = e->sharers & ~(1ull << w);
  for (int x = 0; x < n_; ++x)
    if ((others >> x & 1) && e->pend[x] >= uint32_t(max_pend_)) { out.cell = "commit.counterFull"; return out; }
  out.cell = e->st == DirState::SA ? "commit.SA" : others ? "commit.S.inval" : "commit.S.alone";
  invalidate(*e, others, out.snps);  // lazily: the put is acknowledged now, acks come later
  e->sharers = 1ull << w;            // write-allocate: the writer keeps the new version
  e->base = base; e->size = size;
  if (any_pend(*e)) e->st = DirState::SA;
  out.result = Result::Committed;
  return out;
}

AckOutcome Directory::ack(int c, uint32_t ep, uint32_t obj) {
  Entry* e = lookup(obj);
  bool stale = mut_ == Mutant::AckOldEpoch ? fenced_[c] : zombie(c, ep);
  if (stale || !e || e->pend[c] == 0) {
    std::string cell = !zombie(c, ep) ? "ack.nothingOwed" : (e && e->pend[c] > 0) ? "ack.stale.owing" : "ack.stale";
    return AckOutcome{false, false, cell};
  }
  DirState st = e->st;
  e->pend[c] -= 1;
  owed_[c] -= 1;
  bool last = !any_pend(*e);
  std::string cell = std::string("ack.") + state_name(st) + (last ? ".last" : ".more");
  settle(*e);
  return AckOutcome{true, last, cell};
}

void Directory::fence(int c, uint32_t ep) {
  if (ep != epoch_[c] || fenced_[c]) return;  // a stale fence changes nothing
  fenced_[c] = true;
  for (auto& e : dir_) {  // retire every ack c owes, drop it from every sharer vector
    if (!e.valid) continue;
    e.pend[c] = 0;
    e.sharers &= ~(1ull << c);
    settle(e);
  }
  owed_[c] = 0;
}

uint32_t Directory::rejoin(int c) {
  if (!fenced_[c]) fence(c, epoch_[c]);
  epoch_[c] += 1;
  fenced_[c] = false;
  return epoch_[c];
}

}  // namespace apta
