/* apta-ringbench: drives a running apta-memd through the rings of the rack's guest files as fast as
 * the daemon takes requests, to measure the daemon (not the guests): every guest keeps a window of
 * gets (or puts) outstanding on its request ring for a fixed time, one thread plays all guests
 * (it maps every guest's file, as the host's test tool it is; never the server file).
 *
 *   apta-ringbench RACK_DIR get|put OBJ_BASE LINES SECONDS [WINDOW]
 *
 * Guest g uses object OBJ_BASE+g (registered by the caller, LINES lines each). Heartbeats are
 * written while it runs. Prints one JSON line: requests (messages accepted), completions, seconds.
 * Same layout and codec headers as the daemon (build/qemu-cxl/apta_layout.h, apta_msg.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "apta_layout.h"
#include "apta_msg.h"

static uint8_t *B[APTA_P_servers]; /* guest g's file */
static uint32_t S;

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
static uint64_t ld(unsigned g, uint64_t off) { return __atomic_load_n((uint64_t *)(B[g] + off), __ATOMIC_ACQUIRE); }
static void st(unsigned g, uint64_t off, uint64_t v) { __atomic_store_n((uint64_t *)(B[g] + off), v, __ATOMIC_RELEASE); }

/* one slot into guest g's request ring; 0 if full */
static int produce(unsigned g, const uint8_t *flit, uint32_t seq) {
  uint64_t r = apta_ring_off(APTA_RING_REQUEST), head = ld(g, r + APTA_RING_HEAD);
  if (head - ld(g, r + APTA_RING_TAIL) >= S) return 0;
  uint8_t *slot = B[g] + apta_slot_off(r, head, S);
  memset(slot, 0, APTA_SLOT_BYTES);
  apta_st16(slot, APTA_SLOT_FLIT_BITS, APTA_FLIT_BITS);
  apta_st32(slot, APTA_SLOT_SEQ, seq);
  memcpy(slot + APTA_SLOT_FLIT, flit, APTA_FLIT_BYTES);
  st(g, r + APTA_RING_HEAD, head + 1);
  return 1;
}

/* the next response-ring flit of guest g, or 0 */
static int consume(unsigned g, uint8_t *flit) {
  uint64_t r = apta_ring_off(APTA_RING_RESPONSE), tail = ld(g, r + APTA_RING_TAIL);
  if (tail >= ld(g, r + APTA_RING_HEAD)) return 0;
  memcpy(flit, B[g] + apta_slot_off(r, tail, S) + APTA_SLOT_FLIT, APTA_FLIT_BYTES);
  st(g, r + APTA_RING_TAIL, tail + 1);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: %s RACK_DIR get|put OBJ_BASE LINES SECONDS [WINDOW]\n", argv[0]);
    return 2;
  }
  int put = strcmp(argv[2], "put") == 0;
  uint32_t obj0 = (uint32_t)strtoul(argv[3], 0, 0), lines = (uint32_t)strtoul(argv[4], 0, 0);
  double secs = atof(argv[5]);
  unsigned window = argc > 6 ? (unsigned)atoi(argv[6]) : 8;
  const unsigned n = APTA_P_servers;
  for (unsigned g = 0; g < n; g++) {
    char path[4096], name[64];
    snprintf(name, sizeof name, APTA_GUEST_FILE_FMT, g);
    snprintf(path, sizeof path, "%s/%s", argv[1], name);
    int fd = open(path, O_RDWR);
    if (fd < 0) { perror(path); return 1; }
    B[g] = mmap(0, APTA_GUEST_FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (B[g] == MAP_FAILED) { perror("mmap"); return 1; }
  }
  S = apta_ld32(B[0], APTA_HDR_RING_SLOTS);
  unsigned outstanding[APTA_P_servers] = {0}, epoch[APTA_P_servers];
  uint32_t seq[APTA_P_servers] = {0}, txn[APTA_P_servers] = {0};
  uint64_t requests = 0, done = 0, retries = 0, other = 0, flits_in = 0;
  for (unsigned g = 0; g < n; g++) epoch[g] = apta_ld32(B[g], APTA_GUEST_AREA + APTA_CTL_EPOCH);
  uint64_t t0 = now_ns(), end = t0 + (uint64_t)(secs * 1e9), last_hb = 0;
  uint8_t f[APTA_FLIT_BYTES];
  while (now_ns() < end) {
    uint64_t t = now_ns();
    if (t - last_hb > 5000000ull) {
      for (unsigned g = 0; g < n; g++) apta_st64(B[g], APTA_GUEST_AREA + APTA_CTL_HEARTBEAT, t);
      last_hb = t;
    }
    for (unsigned g = 0; g < n; g++) {
      /* issue: whole requests only (a put's PutPrepare + lines go in together) */
      while (outstanding[g] < window) {
        uint64_t r = apta_ring_off(APTA_RING_REQUEST);
        uint64_t room = S - (ld(g, r + APTA_RING_HEAD) - ld(g, r + APTA_RING_TAIL));
        if (room < (put ? 1 + lines : 1)) break;
        if (put) {
          apta_PutPrepare p = {g, epoch[g], obj0 + g, txn[g] & 0xff};
          apta_pack_PutPrepare(f, &p);
          produce(g, f, seq[g]++);
          for (uint32_t l = 0; l < lines; l++) {
            apta_PutLine m = {g, epoch[g], obj0 + g, txn[g] & 0xff, l, {0}};
            memset(m.data, (int)(txn[g] + l), sizeof m.data);
            apta_pack_PutLine(f, &m);
            produce(g, f, seq[g]++);
          }
          requests += 1 + lines;
          txn[g]++;
        } else {
          apta_ObjGet m = {g, epoch[g], obj0 + g, 0};
          apta_pack_ObjGet(f, &m);
          produce(g, f, seq[g]++);
          requests++;
        }
        outstanding[g]++;
      }
      while (consume(g, f)) {
        flits_in++;
        unsigned op = apta_opcode(f);
        if (op == APTA_OP_ObjData) {
          apta_ObjData d;
          apta_unpack_ObjData(f, &d);
          if (d.line == lines - 1) { outstanding[g]--; done++; }
        } else if (op == APTA_OP_PutCommit) {
          outstanding[g]--; done++;
        } else if (op == APTA_OP_PutRetry) {
          outstanding[g]--; retries++;
        } else {
          other++;
        }
      }
    }
  }
  double el = (double)(now_ns() - t0) / 1e9;
  printf("{\"mode\": \"%s\", \"lines\": %u, \"window\": %u, \"seconds\": %.3f, \"requests\": %llu, "
         "\"completed\": %llu, \"retries\": %llu, \"other\": %llu, \"flits_in\": %llu, "
         "\"requests_per_s\": %.0f, \"completed_per_s\": %.0f}\n",
         put ? "put" : "get", lines, window, el, (unsigned long long)requests, (unsigned long long)done,
         (unsigned long long)retries, (unsigned long long)other, (unsigned long long)flits_in,
         (double)requests / el, (double)done / el);
  return 0;
}
