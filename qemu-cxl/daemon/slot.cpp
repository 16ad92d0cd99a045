// Request-ring slot decoding: see slot.h.
#include "slot.h"

#include <cstdio>
#include <cstring>

namespace apta_slot {

void decode(const uint8_t* slot, unsigned g, Decoded& d) {
  uint16_t fb = apta_ld16(slot, APTA_SLOT_FLIT_BITS);
  d.seq = apta_ld32(slot, APTA_SLOT_SEQ);
#ifdef APTA_FUZZ_MUTANT_SLOT_LENGTH
  // Fuzz mutant (never in the daemon): the guest's flit_bits is checked against the slot's room
  // instead of the flit width, and sizes the copy (a read past the flit into the slot's tail and
  // a write past the flit buffer).
  if (fb > APTA_SLOT_FLIT_ROOM * 8) {
    d.kind = Kind::Refused, d.refused = APTA_REFUSED_BADFLIT, d.op = 0;
    snprintf(d.why, sizeof d.why, "flit_bits");
    return;
  }
  memcpy(d.flit, slot + APTA_SLOT_FLIT, (fb + 7u) / 8u);
#else
  memcpy(d.flit, slot + APTA_SLOT_FLIT, APTA_FLIT_BYTES);
#endif
  d.op = apta_opcode(d.flit);
  d.kind = Kind::Refused;
  d.refused = APTA_REFUSED_BADFLIT;
  d.why[0] = 0;
  int field = 0, e = 0;
#ifndef APTA_FUZZ_MUTANT_SLOT_LENGTH
  if (fb != APTA_FLIT_BITS) {
    snprintf(d.why, sizeof d.why, "flit_bits");
    return;
  }
#endif
  if ((e = apta_check(d.flit, &field)) != 0) {
    snprintf(d.why, sizeof d.why, "msg error %d field %d opcode %u", e, field, d.op);
  } else if (!(((APTA_CHANNEL_REQ_OPS | APTA_CHANNEL_BIRSP_OPS) >> d.op) & 1u)) {
    snprintf(d.why, sizeof d.why, "%s", apta_msg_name(d.op));
  } else if (apta_bits_get(d.flit, APTA_OPCODE_BITS, APTA_P_serverBits) != g
#ifdef APTA_FUZZ_MUTANT_ACK_SERVER
             // Fuzz mutant (never in the daemon): the server check left to requests, so a guest
             // can forge another server's invalidation acks
             && d.op != APTA_OP_ObjBIRsp
#endif
  ) {
    // every message has `server` first, right above the opcode (messages.json, checked by tests)
    d.refused = APTA_REFUSED_WRONGPORT;
    snprintf(d.why, sizeof d.why, "server field is not the ring's");
  } else {
    d.kind = d.op == APTA_OP_ObjBIRsp ? Kind::Ack : Kind::Request;
    d.refused = 0;
  }
}

}  // namespace apta_slot
