// The Apta protocol engine of the memory server: OTC directory (I, S, S^A, SI per object,
// set-associative, cold-shared-first eviction) + OIC (outstanding-ack counts per server and
// object, epochs, fencing). One implementation, used both by the timing simulator and by
// `apta-sim --replay-vectors`, which checks it step by step against the model checker's vectors
// (rtl/CORE.md: ports, cells, vector format). The protocol table is spec/murphi/README.md's
// "protocol table as implemented" (a get in S^A stays S^A; a put in S^A is serviced).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace apta {

enum class DirState { I, S, SA, SI };
enum class Result { Served, Committed, Stall, Drop };
const char* state_name(DirState s);
const char* result_name(Result r);

// Deliberate bugs for showing that the vector replay has teeth (never used by the evaluation).
enum class Mutant {
  None,
  SaGetToS,        // the paper's appendix table: a get in S^A goes to S, losing the pending acks
  PutWaitsAcks,    // CXL 3.0 behaviour: a put while acks are pending stalls instead of being serviced
  AckOldEpoch,     // an ack of an old epoch is applied
};
Mutant parse_mutant(const std::string& s);  // "", "sa_get_to_s", "put_waits_acks", "ack_old_epoch"

struct Snp {  // object-granular back-invalidation (ObjBISnp) to `server`
  int server;
  uint32_t epoch;
  uint32_t obj;
  uint64_t base;
  uint32_t size;
};

struct ReqOutcome {
  Result result;
  std::string cell;        // the CORE.md cell this request exercised
  std::vector<Snp> snps;   // BISnps sent (commit round or eviction)
};

struct AckOutcome {
  bool applied, settled;
  std::string cell;
};

struct Entry {
  bool valid = false;
  uint32_t obj = 0;
  DirState st = DirState::I;
  uint64_t sharers = 0;            // bitmap of servers
  std::vector<uint32_t> pend;      // acks owed per server
  uint64_t base = 0;
  uint32_t size = 0;
};

class Directory {
 public:
  Directory(int servers, int sets, int ways, int max_pend, Mutant m = Mutant::None);

  ReqOutcome get(int server, uint32_t epoch, uint32_t obj, uint64_t base, uint32_t size);
  ReqOutcome commit(int server, uint32_t epoch, uint32_t obj, uint64_t base, uint32_t size);
  AckOutcome ack(int server, uint32_t epoch, uint32_t obj);
  // Fence(server, epoch): fences only if `epoch` is the server's current epoch and it is live.
  void fence(int server, uint32_t epoch);
  uint32_t rejoin(int server);  // fence if needed, then the next epoch; returns it

  // Control-plane queries (rtl/CORE.md `query` / `status`).
  const Entry* find(uint32_t obj) const;
  DirState state(uint32_t obj) const;
  uint64_t sharers(uint32_t obj) const;
  uint32_t pend(uint32_t obj, int server) const;
  bool fenced(int s) const { return fenced_[s]; }
  uint32_t epoch(int s) const { return epoch_[s]; }
  bool owes_any(int s) const { return owed_[s] > 0; }      // pending invalidation-acks
  bool schedulable(int s) const { return !fenced_[s] && owed_[s] == 0; }
  int servers() const { return n_; }

 private:
  int n_, sets_, ways_, max_pend_;
  Mutant mut_;
  std::vector<Entry> dir_;             // sets_ * ways_
  std::vector<bool> fenced_;
  std::vector<uint32_t> epoch_;
  std::vector<uint64_t> owed_;         // total acks owed per server (all objects)

  Entry* lookup(uint32_t obj);
  bool zombie(int s, uint32_t e) const { return fenced_[s] || e != epoch_[s]; }
  // Allocation for an I object: a free way, else evict (Stall). Returns nullptr when stalled.
  Entry* allocate(uint32_t obj, ReqOutcome& out, const char* kind);
  void invalidate(Entry& e, uint64_t servers, std::vector<Snp>& snps);
  void settle(Entry& e);
  bool any_pend(const Entry& e) const;
};

}  // namespace apta
