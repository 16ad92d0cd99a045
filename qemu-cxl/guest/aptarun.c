/* aptarun: the guest-side function runner of qemu-cxl/JOBS.md. One process per guest life:
 *
 *   aptarun --region FILE G BOOT      a host process playing guest G (mmaps guest G's own file)
 *   aptarun G BOOT                    in a QEMU guest: /dev/mem at APTA_REGION_ADDR, APTA_REGION_SIZE
 *   options (before G): --poll-us N (idle poll of the job block, default 200), --timeout-ms N (per
 *   get/put, default the library's 5000), --quiet
 *
 * It joins (acx_init + acx_rejoin), takes every job posted to its previous life as finished
 * (start_seq = done_seq = post_seq), writes runner_life = BOOT << 32 | epoch and state idle, then
 * serves jobs: parse the directives of the args area, run the named function in-process over the
 * CXL store backend (apta_store_cxl.c) with the object cache kept across jobs, log history events
 * and the stats line, write rc, done_seq, state idle. A failing job (bad directive, unknown
 * function, a function's apta_die, a store error) ends with rc != 0 and an {"error": ...} line;
 * the runner goes on serving. While idle it acks invalidations (acx_poll). A thread writes
 * runner_heartbeat every 2 ms (busy or idle); the library's thread writes the control block's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "apta_store_core.h"
#include "apta_store_cxl.h"
#include "apta_util.h"
#include "aptacxl.h"
#include "aptarun_fntab.h"

#define LOG_RESERVE 8192u /* kept free for the job's final error line */
#define MAXFIELDS 8

static volatile uint8_t *R; /* this guest's own CXL memory (its file) */
static volatile uint8_t *B; /* this guest's job block */
static acx C;
static unsigned G, BOOT, POLL_US = 200;
static int QUIET;
static volatile sig_atomic_t STOP;
static volatile int HB_RUN = 1;

/* ---- job block fields ---------------------------------------------------------------------- */
static uint64_t f64(unsigned f) { return __atomic_load_n((volatile uint64_t *)(B + f), __ATOMIC_ACQUIRE); }
static void set64(unsigned f, uint64_t v) { __atomic_store_n((volatile uint64_t *)(B + f), v, __ATOMIC_RELEASE); }
static uint32_t f32(unsigned f) { return __atomic_load_n((volatile uint32_t *)(B + f), __ATOMIC_ACQUIRE); }
static void set32(unsigned f, uint32_t v) { __atomic_store_n((volatile uint32_t *)(B + f), v, __ATOMIC_RELEASE); }

static void *hb_main(void *p) {
  (void)p;
  while (HB_RUN) {
    set64(APTA_JOBF_RUNNER_HEARTBEAT, acx_now_ns());
    struct timespec t = {0, 2000000};
    nanosleep(&t, 0);
  }
  return 0;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  if (QUIET) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "aptarun g%u: ", G);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ---- the job's log ----------------------------------------------------------------------------- */
static uint32_t LOGN;

static int log_write(const char *line, int final) {
  size_t n = strlen(line);
  uint32_t lim = APTA_JOB_AREA_LOG_SIZE - (final ? 0 : LOG_RESERVE);
  if (LOGN + n + 1 > lim) return -1;
  apta_cxl_to_region(B + APTA_JOB_AREA_LOG + LOGN, line, n);
  B[APTA_JOB_AREA_LOG + LOGN + n] = '\n';
  LOGN += (uint32_t)n + 1;
  __atomic_thread_fence(__ATOMIC_RELEASE);
  set32(APTA_JOBF_LOG_BYTES, LOGN); /* after the bytes: the executor may tail the log */
  return 0;
}
static int log_cb(apta_cxl_job *j, const char *line) { (void)j; return log_write(line, 0); }

static void log_error(const char *msg) {
  char line[4096] = "{\"error\": \"";
  char body[3900] = "";
  apta_cxl_json_str(body, sizeof body, msg);
  strcat(line, body);
  strcat(line, "\"}");
  log_write(line, 1);
}

/* ---- the directives ---------------------------------------------------------------------------- */
typedef struct {
  char text[APTA_JOB_AREA_ARGS_SIZE + 1];
  const char *run, *app, *src, *label;
  int inst, ninst;
  const char *pk[APTA_CXL_MAXDECL], *pv[APTA_CXL_MAXDECL];
  int np;
  const char *emits[APTA_CXL_MAXDECL];
  int nemits;
  long garbage; /* -1: not a garbage job */
  long delay_ms; /* JOBS.md delay: a slow producer, so a test's successor placed early really waits */
  apta_fn_entry *fn;
  apta_cxl_job cx;
} job_t;
static job_t J;
static char ERR[4096];

static int bad(int ln, const char *line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(int ln, const char *line, const char *fmt, ...) {
  char why[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  snprintf(ERR, sizeof ERR, "args line %d `%.200s`: %s", ln, line, why);
  return -1;
}

/* a decimal number in [lo, hi] (no sign, no spaces, nothing after) */
static int num(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  if (!*s || *s < '0' || *s > '9') return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static int dup_name(const apta_cxl_decl *d, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(d[i].name, name)) return 1;
  return 0;
}

static int parse(uint32_t args_bytes, uint32_t input_bytes) {
  memset(&J.cx, 0, sizeof J.cx);
  J.run = J.app = J.src = J.label = 0;
  J.inst = 0, J.ninst = 1, J.np = 0, J.nemits = 0, J.garbage = -1, J.delay_ms = 0, J.fn = 0;
  if (args_bytes > APTA_JOB_AREA_ARGS_SIZE) {
    snprintf(ERR, sizeof ERR, "args_bytes %u exceeds the args area (%u)", args_bytes, APTA_JOB_AREA_ARGS_SIZE);
    return -1;
  }
  if (input_bytes > APTA_JOB_AREA_INPUTS_SIZE) {
    snprintf(ERR, sizeof ERR, "input_bytes %u exceeds the inputs area (%u)", input_bytes, APTA_JOB_AREA_INPUTS_SIZE);
    return -1;
  }
  apta_cxl_from_region(J.text, B + APTA_JOB_AREA_ARGS, args_bytes);
  J.text[args_bytes] = 0;
  if (strlen(J.text) != args_bytes) {
    snprintf(ERR, sizeof ERR, "args contain a NUL byte");
    return -1;
  }
  int ln = 0;
  char *save = 0;
  for (char *line = J.text; line && *line; line = save) {
    char *nl = strchr(line, '\n');
    save = nl ? nl + 1 : 0;
    if (nl) *nl = 0;
    ln++;
    if (!*line) continue; /* an empty line */
    char orig[256];
    snprintf(orig, sizeof orig, "%s", line);
    char *w[MAXFIELDS + 1];
    int nw = 0;
    for (char *p = line;;) {
      if (nw > MAXFIELDS) return bad(ln, orig, "too many fields");
      w[nw++] = p;
      char *sp = strchr(p, ' ');
      if (!sp) break;
      *sp = 0;
      p = sp + 1;
    }
    for (int i = 0; i < nw; i++)
      if (!*w[i]) return bad(ln, orig, "empty field (fields are separated by single spaces)");
    const char *d = w[0];
    int want = !strcmp(d, "run") || !strcmp(d, "label") || !strcmp(d, "emit") || !strcmp(d, "param") || !strcmp(d, "garbage") || !strcmp(d, "delay") || !strcmp(d, "pause") ? 2
             : !strcmp(d, "fn") || !strcmp(d, "instance") ? 3
             : !strcmp(d, "get") || !strcmp(d, "put") || !strcmp(d, "input") ? 4 : 0;
    if (!want) return bad(ln, orig, "unknown directive `%s`", d);
    if (!strcmp(d, "get") && nw == 5) want = 5;   /* get <name> <obj> <lines> <version>: a versioned get */
    if (nw != want) return bad(ln, orig, "`%s` takes %d field(s), got %d", d, want - 1, nw - 1);
    uint64_t a, b;
    if (!strcmp(d, "run")) {
      if (J.run) return bad(ln, orig, "a second `run`");
      J.run = w[1];
    } else if (!strcmp(d, "fn")) {
      if (J.app) return bad(ln, orig, "a second `fn`");
      J.app = w[1], J.src = w[2];
      for (int i = 0; i < APTA_NFNS; i++)
        if (!strcmp(APTA_FNS[i].app, J.app) && !strcmp(APTA_FNS[i].source, J.src)) J.fn = &APTA_FNS[i];
      if (!J.fn) return bad(ln, orig, "unknown function %s/%s (not in this runner's %d functions)", J.app, J.src, APTA_NFNS);
    } else if (!strcmp(d, "label")) {
      J.label = w[1];
    } else if (!strcmp(d, "instance")) {
      if (num(w[2], 1, 1u << 20, &b) || num(w[1], 0, b - 1, &a)) return bad(ln, orig, "needs 0 <= i < n");
      J.inst = (int)a, J.ninst = (int)b;
    } else if (!strcmp(d, "get") || !strcmp(d, "put")) {
      int put = d[0] == 'p';
      apta_cxl_decl *set = put ? J.cx.puts : J.cx.gets;
      int *n = put ? &J.cx.nputs : &J.cx.ngets;
      if (num(w[2], 0, (1ull << APTA_P_objIdBits) - 1, &a)) return bad(ln, orig, "object id out of range (0..2^%u-1)", APTA_P_objIdBits);
      if (num(w[3], 1, ACX_MAX_LINES, &b)) return bad(ln, orig, "lines out of range (1..%u)", ACX_MAX_LINES);
      if (dup_name(set, *n, w[1])) return bad(ln, orig, "%s declared twice", w[1]);
      if (*n == APTA_CXL_MAXDECL) return bad(ln, orig, "more than %d %ss", APTA_CXL_MAXDECL, d);
      uint64_t v = 0;
      if (nw == 5 && num(w[4], 1, (1ull << APTA_P_versionBits) - 1, &v))
        return bad(ln, orig, "version out of range (1..2^%u-1)", APTA_P_versionBits);
      set[(*n)++] = (apta_cxl_decl){w[1], (uint32_t)a, (uint32_t)b, 0, 0, v};
    } else if (!strcmp(d, "input")) {
      if (num(w[2], 0, input_bytes, &a) || num(w[3], 0, input_bytes - a, &b))
        return bad(ln, orig, "bytes outside the %u input bytes posted", input_bytes);
      if (dup_name(J.cx.inputs, J.cx.ninputs, w[1])) return bad(ln, orig, "%s declared twice", w[1]);
      if (J.cx.ninputs == APTA_CXL_MAXDECL) return bad(ln, orig, "more than %d inputs", APTA_CXL_MAXDECL);
      J.cx.inputs[J.cx.ninputs++] = (apta_cxl_decl){w[1], 0, 0, a, b, 0};
    } else if (!strcmp(d, "emit")) {
      for (int i = 0; i < J.nemits; i++)
        if (!strcmp(J.emits[i], w[1])) return bad(ln, orig, "%s declared twice", w[1]);
      if (J.nemits == APTA_CXL_MAXDECL) return bad(ln, orig, "more than %d emits", APTA_CXL_MAXDECL);
      J.emits[J.nemits++] = w[1];
    } else if (!strcmp(d, "param")) {
      char *eq = strchr(w[1], '=');
      if (!eq || eq == w[1]) return bad(ln, orig, "needs <key>=<value>");
      if (J.np == APTA_CXL_MAXDECL) return bad(ln, orig, "more than %d params", APTA_CXL_MAXDECL);
      *eq = 0;
      J.pk[J.np] = w[1], J.pv[J.np++] = eq + 1;
    } else if (!strcmp(d, "garbage")) {
      if (num(w[1], 1, 1u << 20, &a)) return bad(ln, orig, "count out of range (1..2^20)");
      J.garbage = (long)a;
    } else if (!strcmp(d, "delay")) {
      if (num(w[1], 1, 10000, &a)) return bad(ln, orig, "milliseconds out of range (1..10000)");
      J.delay_ms = (long)a;
    } else if (!strcmp(d, "pause")) {
      if (num(w[1], 1, 10000, &a)) return bad(ln, orig, "milliseconds out of range (1..10000)");
      J.cx.pause_ms = (long)a;
    }
  }
  if (J.garbage >= 0) {
    if (J.app || J.cx.ngets || J.cx.nputs || J.cx.ninputs || J.nemits) {
      snprintf(ERR, sizeof ERR, "args: a garbage job runs no function (no fn/get/put/input/emit)");
      return -1;
    }
    return 0;
  }
  if (!J.run || !J.app) {
    snprintf(ERR, sizeof ERR, "args: missing `%s` directive", !J.run ? "run" : "fn");
    return -1;
  }
  return 0;
}

/* ---- running a function --------------------------------------------------------------------- */
static jmp_buf JB;
static volatile int IN_FN;

static void on_die(const char *msg) {
  if (!IN_FN) return; /* outside a function: apta_die falls back to exiting */
  snprintf(ERR, sizeof ERR, "%s", msg);
  IN_FN = 0;
  longjmp(JB, 1);
}

static void fresh_state(apta_fn_entry *e) {
  if (e->dstop > e->dstart) memcpy(e->dstart, e->snapshot, (size_t)(e->dstop - e->dstart));
  if (e->bstop > e->bstart) memset(e->bstart, 0, (size_t)(e->bstop - e->bstart));
}

static int run_function(void) {
  static char stats[1024], line[1200];
  apta_fn_entry *e = J.fn;
  J.cx.c = &C, J.cx.block = B, J.cx.run = J.run, J.cx.log = log_cb;
  const char *label = J.label ? J.label : e->source;
  fresh_state(e);
  if (J.delay_ms) usleep((useconds_t)J.delay_ms * 1000);
  int rc;
  if (setjmp(JB) == 0) {
    IN_FN = 1;
    apta_cxl_begin(&J.cx, label);
    for (int i = 0; i < J.cx.ngets; i++) apta_core_declare(APTA_DECL_GET, J.cx.gets[i].name, "get");
    for (int i = 0; i < J.cx.nputs; i++) apta_core_declare(APTA_DECL_PUT, J.cx.puts[i].name, "put");
    for (int i = 0; i < J.cx.ninputs; i++) apta_core_declare(APTA_DECL_INPUT, J.cx.inputs[i].name, "input");
    for (int i = 0; i < J.nemits; i++) apta_core_declare(APTA_DECL_EMIT, J.emits[i], "emit");
    for (int i = 0; i < J.np; i++) apta_core_param(J.pk[i], J.pv[i]);
    apta_core_instance(J.inst, J.ninst);
    apta_core_run(e->entry, stats, sizeof stats);
    IN_FN = 0;
    snprintf(line, sizeof line, "{\"stats\": %s}", stats);
    if (log_write(line, 0)) {
      snprintf(ERR, sizeof ERR, "%s: the job's log area is full", label);
      rc = 2;
    } else {
      rc = 0;
    }
  } else { /* apta_die inside the function or the store: ERR holds its message */
    char msg[sizeof ERR];
    snprintf(msg, sizeof msg, "%s", ERR);
    snprintf(ERR, sizeof ERR, "run %.200s fn %.64s/%.64s: %.3500s", J.run, e->app, e->source, msg);
    rc = 2;
  }
  apta_cxl_end(&J.cx);
  return rc;
}

/* ---- garbage ---------------------------------------------------------------------------------- */
/* one raw slot into our own request ring (as aptacxl's produce, with any flit_bits); its seq */
static int raw_slot(const uint8_t *flit, uint16_t flit_bits, uint32_t *seq, uint64_t deadline) {
  uint64_t r = apta_ring_off(APTA_RING_REQUEST);
  volatile uint64_t *hp = (volatile uint64_t *)(R + r + APTA_RING_HEAD), *tp = (volatile uint64_t *)(R + r + APTA_RING_TAIL);
  uint64_t head = __atomic_load_n(hp, __ATOMIC_ACQUIRE);
  while (head - __atomic_load_n(tp, __ATOMIC_ACQUIRE) >= C.slots) {
    if (acx_now_ns() > deadline) return -1;
    acx_heartbeat(&C);
    struct timespec t = {0, 20000};
    nanosleep(&t, 0);
  }
  uint8_t slot[APTA_SLOT_BYTES];
  memset(slot, 0, sizeof slot);
  apta_st16(slot, APTA_SLOT_FLIT_BITS, flit_bits);
  apta_st32(slot, APTA_SLOT_SEQ, C.seq);
  memcpy(slot + APTA_SLOT_FLIT, flit, APTA_FLIT_BYTES);
  volatile uint64_t *dst = (volatile uint64_t *)(R + apta_slot_off(r, head, C.slots));
  for (unsigned i = 0; i < APTA_SLOT_BYTES / 8; i++) {
    uint64_t w;
    memcpy(&w, slot + 8 * i, 8);
    dst[i] = w;
  }
  __atomic_store_n(hp, head + 1, __ATOMIC_RELEASE);
  *seq = C.seq++;
  return 0;
}

#define GKINDS 6
static const char *GNAMES[GKINDS] = {"not_a_request", "forged_server", "bad_flit_bits", "reserved_bit", "get_unknown_obj",
                                     "prepare_unknown_obj"};

/* JOBS.md garbage: count malformed requests in rotation; each must be answered by a refusal
 * (kinds 0-3, by the daemon) or an ObjErr unknownObj (kinds 4-5, by the RTL). */
static int garbage(long count) {
  uint32_t unknown = 0xFFFFFF00u + G; /* never registered (the executor's ids stay below) */
  unsigned kinds_sent[GKINDS] = {0};
  long sent = 0, refused = 0, objerr = 0, timeouts = 0, other = 0;
  uint64_t rsp = apta_ring_off(APTA_RING_RESPONSE);
  volatile uint64_t *rh = (volatile uint64_t *)(R + rsp + APTA_RING_HEAD), *rt = (volatile uint64_t *)(R + rsp + APTA_RING_TAIL);
  /* drop leftovers of earlier requests */
  __atomic_store_n(rt, __atomic_load_n(rh, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
  long batch = C.slots / 4;
  while (sent < count) {
    long n = count - sent < batch ? count - sent : batch, want = 0, got = 0;
    uint32_t first = C.seq;
    uint64_t deadline = acx_now_ns() + (uint64_t)C.timeout_ms * 1000000ull;
    for (long i = 0; i < n; i++) {
      int k = (int)((sent + i) % GKINDS);
      uint8_t f[APTA_FLIT_BYTES];
      uint16_t bits = APTA_FLIT_BITS;
      uint32_t seq;
      memset(f, 0, sizeof f);
      if (k == 0) {
        apta_ObjData d = {G, C.epoch, unknown, 0, {0}};
        apta_pack_ObjData(f, &d);
      } else if (k == 5) {
        apta_PutPrepare p = {G, C.epoch, unknown, 0};
        apta_pack_PutPrepare(f, &p);
      } else {
        apta_ObjGet m = {k == 1 ? (G + 1) % APTA_P_servers : G, C.epoch, k == 4 ? unknown : 1, 0};
        apta_pack_ObjGet(f, &m);
        if (k == 2) bits = APTA_FLIT_BITS + 5;
        if (k == 3) f[(APTA_FLIT_BITS - 1) / 8] |= (uint8_t)(1u << ((APTA_FLIT_BITS - 1) % 8));
      }
      if (raw_slot(f, bits, &seq, deadline)) break;
      kinds_sent[k]++;
      want++;
    }
    sent += want;
    while (got < want) {
      acx_poll(&C);
      uint64_t tail = __atomic_load_n(rt, __ATOMIC_ACQUIRE);
      if (tail >= __atomic_load_n(rh, __ATOMIC_ACQUIRE)) {
        if (acx_now_ns() > deadline) break;
        acx_heartbeat(&C);
        struct timespec t = {0, 20000};
        nanosleep(&t, 0);
        continue;
      }
      uint8_t slot[APTA_SLOT_FLIT + APTA_FLIT_BYTES + 8];
      volatile uint64_t *src = (volatile uint64_t *)(R + apta_slot_off(rsp, tail, C.slots));
      for (unsigned i = 0; i < sizeof slot / 8; i++) {
        uint64_t w = src[i];
        memcpy(slot + 8 * i, &w, 8);
      }
      __atomic_store_n(rt, tail + 1, __ATOMIC_RELEASE);
      unsigned ref = apta_ld16(slot, APTA_SLOT_REFUSED);
      uint32_t seq = apta_ld32(slot, APTA_SLOT_SEQ);
      const uint8_t *f = slot + APTA_SLOT_FLIT;
      int field;
      if (ref && seq - first < (uint32_t)want) refused++, got++;
      else if (!ref && !apta_check(f, &field) && apta_opcode(f) == APTA_OP_ObjErr) {
        apta_ObjErr x;
        apta_unpack_ObjErr(f, &x);
        if (x.obj == unknown) objerr++, got++;
        else other++;
      } else other++;
    }
    timeouts += want - got;
    if (want < n) { timeouts += n - want; sent += n - want; break; } /* the ring never took them */
  }
  char line[1024];
  int o = snprintf(line, sizeof line, "{\"garbage\": {\"sent\": %ld, \"refused\": %ld, \"objerr\": %ld, \"timeouts\": %ld, \"other\": %ld, \"kinds\": {",
                   sent, refused, objerr, timeouts, other);
  for (int k = 0; k < GKINDS; k++) o += snprintf(line + o, sizeof line - (size_t)o, "%s\"%s\": %u", k ? ", " : "", GNAMES[k], kinds_sent[k]);
  snprintf(line + o, sizeof line - (size_t)o, "}}}");
  log_write(line, 0);
  if (refused + objerr != sent) {
    snprintf(ERR, sizeof ERR, "garbage: %ld of %ld malformed requests got no answer", sent - refused - objerr, sent);
    return 3;
  }
  return 0;
}

/* ---- the loop --------------------------------------------------------------------------------- */
static void write_life(void) { set64(APTA_JOBF_RUNNER_LIFE, (uint64_t)BOOT << 32 | C.epoch); }

static int join(void) {
  for (int k = 0;; k++) {
    int rc = acx_rejoin(&C);
    if (!rc) return 0;
    say("rejoin rc=%d (attempt %d)", rc, k + 1);
    if (k >= 20 || STOP || rc == ACX_EEPOCHS) return rc;   /* the last epoch: fenced until the memory server resets */
  }
}

static void run_job(uint64_t post) {
  /* the sizes first: once start_seq names this job, the executor may tail its log */
  set32(APTA_JOBF_LOG_BYTES, 0);
  set32(APTA_JOBF_EMIT_BYTES, 0);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  set64(APTA_JOBF_START_SEQ, post);
  set32(APTA_JOBF_RUNNER_STATE, APTA_RUNNER_BUSY);
  LOGN = 0;
  ERR[0] = 0;
  uint64_t t0 = acx_now_ns(), timeouts = C.st.timeouts;
  int rc;
  if (parse(f32(APTA_JOBF_ARGS_BYTES), f32(APTA_JOBF_INPUT_BYTES))) rc = 1;
  else if (J.garbage >= 0) rc = garbage(J.garbage);
  else rc = run_function();
  if (C.st.timeouts != timeouts && !STOP) { /* no answer: probably fenced; a new epoch */
    int jr = join();
    if (!jr) {
      write_life();
      size_t n = strlen(ERR);
      snprintf(ERR + n, sizeof ERR - n, " (request timeout: the runner rejoined in epoch %u)", C.epoch);
    }
  }
  if (rc) log_error(ERR[0] ? ERR : "failed");
  set32(APTA_JOBF_RC, (uint32_t)rc);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  set64(APTA_JOBF_DONE_SEQ, post);
  set32(APTA_JOBF_RUNNER_STATE, APTA_RUNNER_IDLE);
  say("job %llu rc=%d %.1f ms%s%s", (unsigned long long)post, rc, (double)(acx_now_ns() - t0) / 1e6, rc ? ": " : "", rc ? ERR : "");
}

static volatile uint8_t *map_region(const char *file) {
  uint64_t size;
  volatile uint8_t *p = acx_map_region(file, &size);
  if (size < APTA_JOBS + APTA_JOB_BYTES) {
    fprintf(stderr, "aptarun: guest file of %llu bytes has no room for the job block\n", (unsigned long long)size);
    exit(2);
  }
  return p;
}

static void on_signal(int s) { (void)s; STOP = 1; }

int main(int argc, char **argv) {
  const char *file = 0;
  unsigned timeout_ms = 0;
  int a = 1;
  for (; a < argc && !strncmp(argv[a], "--", 2); a++) {
    if (!strcmp(argv[a], "--region") && a + 1 < argc) file = argv[++a];
    else if (!strcmp(argv[a], "--poll-us") && a + 1 < argc) POLL_US = (unsigned)atoi(argv[++a]);
    else if (!strcmp(argv[a], "--timeout-ms") && a + 1 < argc) timeout_ms = (unsigned)atoi(argv[++a]);
    else if (!strcmp(argv[a], "--quiet")) QUIET = 1;
    else { fprintf(stderr, "aptarun: unknown option %s\n", argv[a]); return 2; }
  }
  if (argc - a != 2) {
    fprintf(stderr, "usage: aptarun [--region FILE] [--poll-us N] [--timeout-ms N] [--quiet] G BOOT\n");
    return 2;
  }
  G = (unsigned)atoi(argv[a]);
  BOOT = (unsigned)atoi(argv[a + 1]);
  if (G >= APTA_MAX_GUESTS) { fprintf(stderr, "aptarun: guest %u >= %u\n", G, APTA_MAX_GUESTS); return 2; }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, 0);
  sigaction(SIGINT, &sa, 0);

  R = map_region(file);
  B = R + APTA_JOBS;
  for (int i = 0; i < APTA_NFNS; i++) { /* each function's initial .data, restored before every call */
    apta_fn_entry *e = &APTA_FNS[i];
    size_t n = e->dstop > e->dstart ? (size_t)(e->dstop - e->dstart) : 0;
    e->snapshot = malloc(n ? n : 1);
    if (n) memcpy(e->snapshot, e->dstart, n);
  }
  apta_die_handler = on_die;

  int rc = acx_init(&C, R, G, 1);
  if (rc) { fprintf(stderr, "aptarun g%u: acx_init rc=%d (no serving daemon?)\n", G, rc); return 1; }
  if (timeout_ms) C.timeout_ms = timeout_ms;
  pthread_t hb;
  set64(APTA_JOBF_RUNNER_HEARTBEAT, acx_now_ns());
  pthread_create(&hb, 0, hb_main, 0);
  if (join()) { fprintf(stderr, "aptarun g%u: cannot rejoin\n", G); return 1; }
  /* JOBS.md step 1: a job posted to the previous life is never run by this one */
  uint64_t post = f64(APTA_JOBF_POST_SEQ);
  set64(APTA_JOBF_START_SEQ, post);
  set64(APTA_JOBF_DONE_SEQ, post);
  write_life();
  set32(APTA_JOBF_RUNNER_STATE, APTA_RUNNER_IDLE);
  say("ready: boot %u epoch %u, %d functions, done_seq %llu", BOOT, C.epoch, APTA_NFNS, (unsigned long long)post);

  while (!STOP) {
    uint64_t p = f64(APTA_JOBF_POST_SEQ);
    if (p > f64(APTA_JOBF_DONE_SEQ)) {
      run_job(p);
      continue;
    }
    acx_poll(&C); /* ack invalidations of cached copies while idle */
    struct timespec t = {0, (long)POLL_US * 1000};
    nanosleep(&t, 0);
  }
  set32(APTA_JOBF_RUNNER_STATE, APTA_RUNNER_NONE);
  HB_RUN = 0;
  pthread_join(hb, 0);
  acx_close(&C);
  say("stopped");
  return 0;
}
