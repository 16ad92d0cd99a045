// libFuzzer target: the request-ring slot decoder (slot.cpp apta_slot::decode, ring_sane), the
// code rings.cpp's pull_ring runs on every slot a guest writes.
//
// Input: byte 0 picks the ring (guest g = byte % servers) and the ring size for ring_sane
// (S = 2^(byte >> 4 mod 11)); the next APTA_SLOT_BYTES bytes are the slot (zero-padded); 16 more,
// if present, are a head and tail (u64 LE). The slot lives in a heap buffer of exactly
// APTA_SLOT_BYTES, so AddressSanitizer reports any read past it.
//
// Contract, beyond "no crash": decode never writes the slot; it always echoes seq and the flit
// area verbatim (a refusal carries them back); it accepts exactly the slots the rules of RINGS.md
// admit (flit_bits = flitBits, apta_check clean, a request-ring opcode, server = g), an ObjBIRsp
// as Ack and the rest as Request; an accepted flit re-serializes (unpack + pack by its opcode) to
// the same bytes; a refusal is badFlit or wrongPort and its `why` names the first rule broken.
#include <cstring>
#include <vector>

#include "../slot.h"
#include "contract.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const unsigned g = data[0] % APTA_P_servers;
  const uint32_t S = 1u << ((data[0] >> 4) % 11);
  std::vector<uint8_t> copy(APTA_SLOT_BYTES, 0);
  memcpy(copy.data(), data + 1, std::min<size_t>(size - 1, APTA_SLOT_BYTES));
  uint8_t* slot = new uint8_t[APTA_SLOT_BYTES];
  memcpy(slot, copy.data(), APTA_SLOT_BYTES);

  apta_slot::Decoded d;
  apta_slot::decode(slot, g, d);

  REQUIRE(memcmp(slot, copy.data(), APTA_SLOT_BYTES) == 0, "decode wrote the guest's slot");
  REQUIRE(d.seq == apta_ld32(slot, APTA_SLOT_SEQ), "seq %u not the slot's %u", d.seq, apta_ld32(slot, APTA_SLOT_SEQ));
  REQUIRE(memcmp(d.flit, slot + APTA_SLOT_FLIT, APTA_FLIT_BYTES) == 0, "the flit is not the slot's flit area");
  REQUIRE(d.op == apta_opcode(d.flit), "op %u is not the flit's opcode", d.op);

  // the rules, in the order RINGS.md and the daemon apply them
  const uint16_t fb = apta_ld16(slot, APTA_SLOT_FLIT_BITS);
  int field = 0;
  const int err = apta_check(d.flit, &field);
  const bool on_ring = ((APTA_CHANNEL_REQ_OPS | APTA_CHANNEL_BIRSP_OPS) >> d.op) & 1u;
  const unsigned server = unsigned(apta_bits_get(d.flit, APTA_OPCODE_BITS, APTA_P_serverBits));
  const char* broken = fb != APTA_FLIT_BITS ? "flit_bits" : err ? "msg error" : !on_ring ? apta_msg_name(d.op)
                     : server != g ? "server field" : nullptr;

  if (d.kind != apta_slot::Kind::Refused) {
    REQUIRE(!broken, "accepted a slot that breaks %s (flit_bits %u, op %u, server %u, ring %u)", broken, fb, d.op, server, g);
    REQUIRE((d.kind == apta_slot::Kind::Ack) == (d.op == APTA_OP_ObjBIRsp), "op %u decoded as %s", d.op,
            d.kind == apta_slot::Kind::Ack ? "Ack" : "Request");
    REQUIRE(d.refused == 0, "accepted with refused = %u", d.refused);
    uint8_t re[APTA_FLIT_BYTES];
    memset(re, 0xA5, sizeof re);
    REQUIRE(apta_repack(d.flit, re) == 1, "accepted op %u has no codec", d.op);
    REQUIRE(memcmp(re, d.flit, APTA_FLIT_BYTES) == 0, "accepted op %u does not re-serialize to the same flit", d.op);
  } else {
    REQUIRE(broken, "refused a slot that breaks no rule (op %u, why \"%s\")", d.op, d.why);
    REQUIRE(d.why[0] && memchr(d.why, 0, sizeof d.why), "a refusal without a reason");
    REQUIRE(strstr(d.why, broken) == d.why, "refusal names \"%s\", the first rule broken is %s", d.why, broken);
    uint16_t want = strcmp(broken, "server field") == 0 ? APTA_REFUSED_WRONGPORT : APTA_REFUSED_BADFLIT;
    REQUIRE(d.refused == want, "refused = %u for %s, want %u", d.refused, broken, want);
  }

  if (size >= 1 + APTA_SLOT_BYTES + 16) {
    uint64_t head, tail;
    memcpy(&head, data + 1 + APTA_SLOT_BYTES, 8);
    memcpy(&tail, data + 1 + APTA_SLOT_BYTES + 8, 8);
    bool sane = head >= tail && head - tail <= S;
    REQUIRE(apta_slot::ring_sane(head, tail, S) == sane, "ring_sane(head %llu, tail %llu, S %u) is %d",
            (unsigned long long)head, (unsigned long long)tail, S, !sane);
  }
  delete[] slot;
  return 0;
}
