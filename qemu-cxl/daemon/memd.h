// What the daemon's parts share: the RTL variant's sizes, a flit, the rack's memory (Region), a
// guest's rings and lease state, the stderr log. Which part does what: README.md "Files".
#pragma once

#include <signal.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>

extern "C" {
#include "apta_layout.h"
#include "apta_msg.h"
#include "apta_enums.h"  // error codes (schema/messages.json msErrors)
}

namespace apta_memd {

constexpr unsigned N = APTA_P_servers;  // compute servers of the RTL variant = guests
constexpr unsigned LINE = 64;            // bytes per AXI beat (dataBits 512)
static_assert(APTA_P_dataBits == 8 * LINE, "one cache line per AXI beat");
static_assert(APTA_FLIT_BYTES <= APTA_SLOT_FLIT_ROOM, "a flit must fit a ring slot");
static_assert(N <= APTA_MAX_GUESTS, "more servers than guest areas");

using Flit = std::array<uint8_t, APTA_FLIT_BYTES>;

extern volatile sig_atomic_t g_stop;   // SIGTERM, SIGINT: the main loop ends
uint64_t now_ns();                     // CLOCK_MONOTONIC
// One line per state change on stderr, stamped with the seconds since the start.
void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// The server field every M->C flit carries after its opcode.
inline unsigned server_of(const Flit& f) {
  return unsigned(apta_bits_get(f.data(), APTA_OPCODE_BITS, APTA_P_serverBits));
}

// The rack's files (RINGS.md). base: the server file (header + data area, private to the daemon);
// guest[g]: the first APTA_GUEST_FILE_BYTES of guest g's file, the only memory guest g can write.
struct Region {
  uint8_t* base = nullptr;
  uint64_t bytes = 0;
  uint8_t* guest[N] = {};
  uint32_t slots = APTA_DEFAULT_SLOTS;
  uint64_t data_bytes() const { return bytes - APTA_DATA_OFFSET; }
  uint64_t ld64(unsigned g, uint64_t off) const {
    return __atomic_load_n(reinterpret_cast<const uint64_t*>(guest[g] + off), __ATOMIC_ACQUIRE);
  }
  void st64(unsigned g, uint64_t off, uint64_t v) {
    __atomic_store_n(reinterpret_cast<uint64_t*>(guest[g] + off), v, __ATOMIC_RELEASE);
  }
};

// A ring the daemon produces into (response, invalidation): the daemon keeps its own head, and a
// bounded backlog for when the guest does not consume (a dead guest must never block the RTL's
// shared rsp/snp ports, P4; what overflows the backlog is dropped, as the link drops messages to
// a crashed server).
struct OutRing {
  unsigned g = 0;                      // whose file it is in
  uint64_t off = 0, head = 0;
  uint32_t seq = 0;
  struct Slot { Flit flit; uint16_t refused; uint32_t seq; };
  std::deque<Slot> backlog;
  uint64_t dropped = 0;
};
constexpr size_t BACKLOG_MAX = 4096;

// Rejoins are rate-limited per server so that epochs never wrap in practice: a token bucket of
// --rejoin-burst rejoins refilled at --rejoin-rate per second, shared by the server's ring and
// the API. Epochs are never reused (a Rejoin at the last value is refused), so what the limit
// bounds is how fast a server can spend them: its 65,535 epochs last at least 18 h at 1/s instead
// of 7 s, and a burst covers every legitimate reboot-and-rejoin sequence.
struct RejoinBucket {
  double tokens = -1;                  // < 0: not yet filled (the first use fills it to the burst)
  uint64_t last_ns = 0;
  // Takes one rejoin if the bucket has one; else false and the ms until it will.
  bool take(double rate, double burst, uint64_t now, uint64_t& wait_ms) {
    if (rate <= 0) return true;        // --rejoin-rate 0: no limit
    tokens = tokens < 0 ? burst : std::min(burst, tokens + double(now - last_ns) * rate / 1e9);
    last_ns = now;
    if (tokens >= 1) { tokens -= 1; return true; }
    wait_ms = uint64_t((1 - tokens) / rate * 1000) + 1;
    return false;
  }
};

struct Guest {
  uint64_t req_off = 0, req_tail = 0;  // request ring: the daemon is its consumer
  OutRing rsp, inv;
  std::deque<Flit> req_q;              // requests read from the ring, waiting for io_req_<g>
  std::deque<Flit> ack_q;              // ObjBIRsp read from the ring, waiting for io_birsp
  uint64_t hb_last = 0, hb_change_ns = 0;
  bool broken = false;                 // head ran away: rings ignored until head - tail <= S again
  uint64_t refusals = 0, requests = 0;
  long qemu_pid = 0;                   // the live QEMU pid last read from its pidfile (0: none)
  uint64_t pid_checked_ns = 0;
  RejoinBucket rejoin;
  bool rejoin_held = false;            // a ring Rejoin waits in the ring for the bucket (logged once)
  uint64_t rejoins_held = 0, rejoins_refused = 0;
};
constexpr size_t REQ_Q_MAX = 8;        // read-ahead of a guest's requests (acks must not wait behind them)
constexpr size_t ACK_Q_MAX = 1024;

}  // namespace apta_memd
