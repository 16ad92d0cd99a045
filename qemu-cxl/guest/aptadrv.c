/* aptadrv: a small driver of the guest library (aptacxl), for tests and measurements.
 *
 *   aptadrv [--region FILE] G cmd       commands from stdin, one answer line each (tests/test_guestlib.py)
 *   aptadrv [--region FILE] G loop OBJBASE NOBJ NLINES SECONDS
 *                                       guest G puts object OBJBASE+G (versions 1, 2, ...) and gets the
 *                                       NOBJ objects OBJBASE.. in turn, checking every reply (QEMU guests)
 *   aptadrv [--region FILE] G hold OBJ NLINES SECONDS
 *                                       gets OBJ (a copy), then heartbeats without reading its invalidation
 *                                       ring (it owes the ack of a put meanwhile) until the go signal (or
 *                                       SECONDS), then acks and gets OBJ again (tests/test_qemu_cxl.py)
 *   aptadrv [--region FILE] G attack VICTIM OBJ NLINES SECONDS
 *                                       gets OBJ, waits for its snoop and acks it, waits for the go signal,
 *                                       forges ObjBIRsp(OBJ) and Rejoin with VICTIM's server id in its own
 *                                       request ring (each must be refused, wrongPort), then sweeps (below)
 *                                       and idles SECONDS
 *   The go signal: the host changes post_seq of the guest's own job block (JOBS.md: the executor's
 *   mailbox into the guest), so the test can take its snapshots first.
 *   aptadrv [--region FILE] G sweep SECONDS
 *                                       writes the marker APTAEVIL at every 64-byte line of everything it
 *                                       mapped (its whole CXL memory), then idles SECONDS; needs no daemon
 *
 * The region: --region FILE mmaps a file (a host process playing a guest); without it /dev/mem at
 * APTA_REGION_ADDR, APTA_REGION_SIZE (set by the guest image's /init, qemu-cxl/README.md).
 *
 * Object contents (so that any reply can be checked on its own): line l of object o at version v
 * is u32 o, u32 v, u32 l, then bytes (o*7 + v*13 + l*3 + k) & 0xff for k = 12..63.
 *
 * Commands: rejoin | get OBJ N | getnc OBJ N (bypass the cache) | put OBJ N VER | poll |
 * cached OBJ | bench get|put OBJ N SECONDS | stats | quit. Answers start with OK or ERR. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "aptacxl.h"

static void fill(uint8_t *buf, uint32_t o, uint32_t v, unsigned n) {
  for (unsigned l = 0; l < n; l++) {
    uint8_t *p = buf + l * ACX_LINE;
    memcpy(p, &o, 4), memcpy(p + 4, &v, 4), memcpy(p + 8, &l, 4);
    for (unsigned k = 12; k < ACX_LINE; k++) p[k] = (uint8_t)(o * 7 + v * 13 + l * 3 + k);
  }
}
/* the version of a reply, or -1 if it is not one whole version of o */
static long check(const uint8_t *buf, uint32_t o, unsigned n) {
  uint32_t v;
  memcpy(&v, buf + 4, 4);
  uint8_t want[ACX_MAX_LINES * ACX_LINE];
  fill(want, o, v, n);
  return memcmp(want, buf, (size_t)n * ACX_LINE) ? -1 : (long)v;
}

/* Every 64-byte line of the mapping gets the marker: the guest's whole reach (RINGS.md, trust
 * model). The test looks for the marker in every other file. */
#define SWEEP_MARKER 0x4c49564541545041ull /* "APTAEVIL" little-endian */
static int sweep(volatile uint8_t *base, uint64_t size, double idle_s) {
  uint64_t t0 = acx_now_ns(), lines = 0;
  printf("DRV SWEEP START bytes=%llu\n", (unsigned long long)size);
  for (uint64_t off = 0; off + 8 <= size; off += 64, lines++) *(volatile uint64_t *)(base + off) = SWEEP_MARKER;
  printf("DRV SWEEP DONE lines=%llu bytes=%llu ms=%.0f\n", (unsigned long long)lines, (unsigned long long)size,
         (double)(acx_now_ns() - t0) / 1e6);
  struct timespec t = {(time_t)idle_s, 0};
  nanosleep(&t, 0);
  return 0;
}

static double us_since(uint64_t t0) { return (double)(acx_now_ns() - t0) / 1e3; }

static void bench(acx *c, int put, uint32_t o, unsigned n, double secs) {
  uint8_t buf[ACX_MAX_LINES * ACX_LINE];
  uint64_t t0 = acx_now_ns(), end = t0 + (uint64_t)(secs * 1e9), ops = 0, errs = 0, retries = 0;
  double maxus = 0;
  int save = c->use_cache;
  c->use_cache = 0;
  uint32_t v = 1000;
  while (acx_now_ns() < end) {
    uint64_t t = acx_now_ns();
    int rc;
    unsigned r = 0;
    if (put) { fill(buf, o, v++, n); rc = acx_put(c, o, buf, n, &r); retries += r; }
    else rc = acx_get(c, o, buf, n, 0);
    double us = us_since(t);
    if (us > maxus) maxus = us;
    if (rc) errs++; else ops++;
  }
  c->use_cache = save;
  double el = (double)(acx_now_ns() - t0) / 1e9;
  printf("OK bench %s obj=%u lines=%u ops=%llu errs=%llu retries=%llu seconds=%.3f ops_per_s=%.1f "
         "mean_us=%.1f max_us=%.1f\n", put ? "put" : "get", o, n, (unsigned long long)ops,
         (unsigned long long)errs, (unsigned long long)retries, el, ops / el, ops ? el * 1e6 / ops : 0.0, maxus);
}

static int cmd_loop(acx *c, uint32_t base, unsigned nobj, unsigned n, double secs) {
  uint8_t buf[ACX_MAX_LINES * ACX_LINE];
  long last[64];
  for (unsigned i = 0; i < 64; i++) last[i] = -1;
  uint32_t mine = base + c->g, v = 0;
  /* versions go on from the object's current one (a rebooted guest must not put older numbers) */
  for (int k = 0; k < 20; k++) {
    int hit;
    if (acx_get(c, mine, buf, n, &hit) == ACX_OK) {
      long cur = check(buf, mine, n);
      if (cur > 0) v = (uint32_t)cur;
      break;
    }
    if (acx_rejoin(c) == 0) printf("DRV REJOINED g=%u epoch=%u\n", c->g, c->epoch);
  }
  uint64_t t0 = acx_now_ns(), end = t0 + (uint64_t)(secs * 1e9), tp = t0;
  uint64_t gets = 0, puts = 0, bad = 0, errs = 0;
  double get_us = 0, put_us = 0;
  while (acx_now_ns() < end) {
    uint64_t t = acx_now_ns();
    fill(buf, mine, ++v, n);
    unsigned r;
    int rc = acx_put(c, mine, buf, n, &r);
    if (rc) { errs++; printf("DRV ERR g=%u put obj=%u rc=%d code=%d\n", c->g, mine, rc, c->last_code); v--; }
    else { puts++; put_us += us_since(t); }
    for (unsigned i = 0; i < nobj && i < 64; i++) {
      uint32_t o = base + i;
      int hit;
      t = acx_now_ns();
      rc = acx_get(c, o, buf, n, &hit);
      if (rc) { errs++; printf("DRV ERR g=%u get obj=%u rc=%d code=%d\n", c->g, o, rc, c->last_code); continue; }
      if (!hit) gets++, get_us += us_since(t);
      long ver = check(buf, o, n);
      if (ver < 0 || ver < last[i]) { bad++; printf("DRV BAD g=%u obj=%u ver=%ld last=%ld\n", c->g, o, ver, last[i]); }
      else if (ver != last[i]) { /* printed until a put is seen (the serial console is slow) */
        if (last[i] < 1) printf("DRV SEE g=%u obj=%u ver=%ld\n", c->g, o, ver);
        last[i] = ver;
      }
    }
    if (acx_now_ns() - tp > 2000000000ull) {
      tp = acx_now_ns();
      printf("DRV PROGRESS g=%u epoch=%u v0=%ld v1=%ld v2=%ld puts=%llu gets=%llu errs=%llu bad=%llu put_us=%.0f get_us=%.0f\n",
             c->g, c->epoch, last[0], last[1], last[2], (unsigned long long)puts, (unsigned long long)gets, (unsigned long long)errs,
             (unsigned long long)bad, puts ? put_us / puts : 0.0, gets ? get_us / gets : 0.0);
    }
    if (rc == ACX_ETIMEOUT && acx_rejoin(c) == 0) printf("DRV REJOINED g=%u epoch=%u\n", c->g, c->epoch);
  }
  printf("DRV DONE g=%u epoch=%u puts=%llu gets=%llu errs=%llu bad=%llu put_us=%.0f get_us=%.0f snoops=%llu acks=%llu\n",
         c->g, c->epoch, (unsigned long long)puts, (unsigned long long)gets, (unsigned long long)errs,
         (unsigned long long)bad, puts ? put_us / puts : 0.0, gets ? get_us / gets : 0.0,
         (unsigned long long)c->st.snoops, (unsigned long long)c->st.acks);
  return bad ? 1 : 0;
}

/* waits until the host changes post_seq of our job block, or secs (heartbeating: the library's
 * thread beats) */
static void wait_go(acx *c, double secs) {
  volatile uint64_t *post = (volatile uint64_t *)(c->base + APTA_JOBS + APTA_JOBF_POST_SEQ);
  uint64_t p0 = *post, end = acx_now_ns() + (uint64_t)(secs * 1e9);
  while (*post == p0 && acx_now_ns() < end) {
    struct timespec t = {0, 10000000};
    nanosleep(&t, 0);
  }
}

/* isolation test, the victim: a copy of obj, then no acks until the go signal */
static int cmd_hold(acx *c, uint32_t obj, unsigned n, double secs) {
  uint8_t buf[ACX_MAX_LINES * ACX_LINE];
  int hit, rc = acx_get(c, obj, buf, n, &hit);
  if (rc) { printf("DRV ERR g=%u hold get obj=%u rc=%d code=%d\n", c->g, obj, rc, c->last_code); return 1; }
  printf("DRV HOLD READY g=%u epoch=%u obj=%u ver=%ld\n", c->g, c->epoch, obj, check(buf, obj, n));
  wait_go(c, secs); /* the invalidation ring is not read meanwhile */
  int acks = acx_poll(c);
  rc = acx_get(c, obj, buf, n, &hit);
  printf("DRV HOLD DONE g=%u epoch=%u acks=%d rc=%d ver=%ld cached=%d\n", c->g, c->epoch, acks, rc,
         rc ? -1 : check(buf, obj, n), hit);
  return rc ? 1 : 0;
}

/* isolation test, the attacker: forged acks and rejoins of the victim through its own ring, then
 * the sweep of everything it can write */
static int cmd_attack(acx *c, volatile uint8_t *base, uint64_t size, unsigned victim, uint32_t obj, unsigned n,
                      double secs) {
  uint8_t buf[ACX_MAX_LINES * ACX_LINE], f[APTA_FLIT_BYTES];
  int hit, rc = acx_get(c, obj, buf, n, &hit);
  if (rc) { printf("DRV ERR g=%u attack get obj=%u rc=%d code=%d\n", c->g, obj, rc, c->last_code); return 1; }
  printf("DRV ATTACK READY g=%u epoch=%u obj=%u\n", c->g, c->epoch, obj);
  /* a put of obj by someone else snoops us (and the victim): ack ours, as a correct guest does */
  uint64_t end = acx_now_ns() + 600ull * 1000000000ull;
  int acks = 0;
  while (!(acks = acx_poll(c)) && acx_now_ns() < end) {
    struct timespec t = {0, 1000000};
    nanosleep(&t, 0);
  }
  printf("DRV ACKED g=%u obj=%u acks=%d\n", c->g, obj, acks);
  wait_go(c, 600);
  /* the forgeries: the victim's id in the flit, our own ring (the only one we can reach); the
     victim's epoch is not readable from here, every epoch up to ours + 1 is tried */
  unsigned refused = 0, sent = 0;
  for (uint32_t e = 0; e <= c->epoch + 1; e++) {
    for (int k = 0; k < 2; k++) {
      uint32_t seq;
      unsigned code = 0;
      memset(f, 0, sizeof f);
      if (k == 0) { apta_ObjBIRsp a = {victim, e, obj}; apta_pack_ObjBIRsp(f, &a); }
      else { apta_Rejoin j = {victim, e}; apta_pack_Rejoin(f, &j); }
      if (acx_send_flit(c, f, &seq)) { printf("DRV ERR g=%u forge: request ring full\n", c->g); return 1; }
      sent++;
      rc = acx_wait_refusal(c, seq, &code);
      printf("DRV FORGED g=%u kind=%s victim=%u epoch=%u rc=%d code=%u\n", c->g, k ? "Rejoin" : "ObjBIRsp", victim, e,
             rc, code);
      if (!rc && code == APTA_REFUSED_WRONGPORT) refused++;
    }
  }
  printf("DRV FORGED ALL g=%u sent=%u refused=%u\n", c->g, sent, refused);
  return sweep(base, size, secs);
}

int main(int argc, char **argv) {
  setvbuf(stdout, 0, _IOLBF, 0);
  const char *file = 0;
  if (argc > 2 && !strcmp(argv[1], "--region")) file = argv[2], argv += 2, argc -= 2;
  if (argc < 3) { fprintf(stderr, "usage: aptadrv [--region FILE] G cmd|loop ...\n"); return 2; }
  unsigned g = (unsigned)atoi(argv[1]);
  uint64_t size;
  volatile uint8_t *base = acx_map_region(file, &size);
  if (!strcmp(argv[2], "sweep") && argc >= 4) return sweep(base, size, atof(argv[3]));
  static acx c;
  int rc = acx_init(&c, base, g, 1);
  if (rc) { printf("DRV FAIL init rc=%d\n", rc); return 1; }
  if (getenv("APTA_TIMEOUT_MS")) c.timeout_ms = (unsigned)atoi(getenv("APTA_TIMEOUT_MS"));
  if (!strcmp(argv[2], "loop") && argc >= 7) {
    for (int k = 0; (rc = acx_rejoin(&c)) != 0; k++) {
      printf("DRV ERR g=%u rejoin rc=%d\n", g, rc);
      if (k > 20) return 1;
    }
    printf("DRV JOINED g=%u epoch=%u\n", g, c.epoch);
    rc = cmd_loop(&c, (uint32_t)strtoul(argv[3], 0, 0), (unsigned)atoi(argv[4]), (unsigned)atoi(argv[5]), atof(argv[6]));
    acx_close(&c);
    return rc;
  }
  if ((!strcmp(argv[2], "hold") && argc >= 6) || (!strcmp(argv[2], "attack") && argc >= 7)) {
    for (int k = 0; (rc = acx_rejoin(&c)) != 0; k++) {
      printf("DRV ERR g=%u rejoin rc=%d\n", g, rc);
      if (k > 20) return 1;
    }
    printf("DRV JOINED g=%u epoch=%u\n", g, c.epoch);
    if (argv[2][0] == 'h')
      return cmd_hold(&c, (uint32_t)strtoul(argv[3], 0, 0), (unsigned)atoi(argv[4]), atof(argv[5]));
    return cmd_attack(&c, base, size, (unsigned)atoi(argv[3]), (uint32_t)strtoul(argv[4], 0, 0), (unsigned)atoi(argv[5]),
                      atof(argv[6]));
  }
  char line[256], w[16], m[16];
  uint8_t buf[ACX_MAX_LINES * ACX_LINE];
  while (fgets(line, sizeof line, stdin)) {
    unsigned o = 0, n = 0, v = 0;
    double s = 0;
    uint64_t t = acx_now_ns();
    if (sscanf(line, "%15s", w) != 1) continue;
    if (!strcmp(w, "quit")) break;
    if (!strcmp(w, "rejoin")) {
      rc = acx_rejoin(&c);
      if (rc) printf("ERR rejoin rc=%d\n", rc); else printf("OK rejoin epoch=%u\n", c.epoch);
    } else if ((!strcmp(w, "get") || !strcmp(w, "getnc")) && sscanf(line, "%*s %u %u", &o, &n) == 2) {
      int hit, save = c.use_cache;
      if (w[3]) c.use_cache = 0;
      rc = acx_get(&c, o, buf, n, &hit);
      c.use_cache = save;
      if (rc) printf("ERR get obj=%u rc=%d code=%d\n", o, rc, c.last_code);
      else printf("OK get obj=%u ver=%ld cached=%d us=%.1f\n", o, check(buf, o, n), hit, us_since(t));
    } else if (!strcmp(w, "getv") && sscanf(line, "%*s %u %u %u", &o, &n, &v) == 3) {
      int hit;                       /* a versioned get: object o at commit v or later */
      rc = acx_get_v(&c, o, v, buf, n, &hit);
      if (rc) printf("ERR getv obj=%u rc=%d code=%d\n", o, rc, c.last_code);
      else printf("OK getv obj=%u ver=%ld cached=%d us=%.1f\n", o, check(buf, o, n), hit, us_since(t));
    } else if (!strcmp(w, "put") && sscanf(line, "%*s %u %u %u", &o, &n, &v) == 3) {
      unsigned r;
      fill(buf, o, v, n);
      rc = acx_put(&c, o, buf, n, &r);
      if (rc) printf("ERR put obj=%u rc=%d code=%d\n", o, rc, c.last_code);
      else printf("OK put obj=%u ver=%u retries=%u us=%.1f\n", o, v, r, us_since(t));
    } else if (!strcmp(w, "poll")) {
      printf("OK poll acks=%d\n", acx_poll(&c));
    } else if (!strcmp(w, "cached") && sscanf(line, "%*s %u", &o) == 1) {
      acx_poll(&c);
      printf("OK cached obj=%u %d\n", o, acx_cached(&c, o));
    } else if (!strcmp(w, "bench") && sscanf(line, "%*s %15s %u %u %lf", m, &o, &n, &s) == 4) {
      bench(&c, !strcmp(m, "put"), o, n, s);
    } else if (!strcmp(w, "stats")) {
      acx_stats *q = &c.st;
      printf("OK stats epoch=%u gets=%llu hits=%llu puts=%llu retries=%llu snoops=%llu acks=%llu old=%llu "
             "stale=%llu refusals=%llu objerrs=%llu timeouts=%llu get_retries=%llu cancelled=%llu\n", c.epoch,
             (unsigned long long)q->gets, (unsigned long long)q->get_hits, (unsigned long long)q->puts,
             (unsigned long long)q->put_retries, (unsigned long long)q->snoops, (unsigned long long)q->acks,
             (unsigned long long)q->old_snoops, (unsigned long long)q->stale_rsp, (unsigned long long)q->refusals,
             (unsigned long long)q->objerrs, (unsigned long long)q->timeouts, (unsigned long long)q->get_retries,
             (unsigned long long)q->cancelled);
    } else {
      printf("ERR unknown command\n");
    }
  }
  acx_close(&c);
  return 0;
}
