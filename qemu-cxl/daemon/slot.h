// Request-ring slot decoding (RINGS.md): what turns a guest-written slot into a request for the
// RTL or a refusal, with nothing of the RTL in it, so that the daemon (rings.cpp pull_ring) and the
// fuzz target (fuzz/fuzz_slot.cpp) run the same code. Nothing a guest writes is trusted.
#pragma once

#include <cstdint>

extern "C" {
#include "apta_layout.h"
#include "apta_msg.h"
}

namespace apta_slot {

enum class Kind { Request, Ack, Refused };   // io_req_<g>, io_birsp, a refusal slot

struct Decoded {
  Kind kind = Kind::Refused;
  unsigned op = 0;                    // the flit's opcode as written (also of a refused flit)
  uint16_t refused = 0;               // Refused: APTA_REFUSED_BADFLIT or APTA_REFUSED_WRONGPORT
  char why[64] = {};                  // Refused: what was wrong ("flit_bits", "msg error 2 field 5 opcode 3", ...)
  uint32_t seq = 0;                   // the slot's seq (echoed in a refusal)
  uint8_t flit[APTA_FLIT_BYTES] = {}; // the slot's flit area, APTA_FLIT_BYTES bytes, as written
};

// Decodes the APTA_SLOT_BYTES bytes at `slot`, read from guest g's request ring. Request / Ack:
// flit_bits is the daemon's flitBits, apta_check passes, the opcode travels on the request ring
// (request or ObjBIRsp) and the flit's server field is g. Reads only the slot's bytes.
void decode(const uint8_t* slot, unsigned g, Decoded& d);

// A request ring whose producer index `head` is at most `slots` ahead of the consumer's `tail`
// and not behind it: otherwise the guest is broken (fenced). head - tail alone is not enough: the
// daemon resumes its tail from the region (no --init), which the guest can write, and a tail
// within S of 2^64 above head makes the u64 difference small (found by fuzz_slot).
inline bool ring_sane(uint64_t head, uint64_t tail, uint32_t slots) { return head >= tail && head - tail <= slots; }

}  // namespace apta_slot
