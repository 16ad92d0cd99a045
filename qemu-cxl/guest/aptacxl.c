/* aptacxl: the guest library over the rings of qemu-cxl/RINGS.md (see aptacxl.h). */
#define _GNU_SOURCE
#include "aptacxl.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

uint64_t acx_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t ld(acx *c, uint64_t off) {
  return __atomic_load_n((volatile uint64_t *)(c->base + off), __ATOMIC_ACQUIRE);
}
static void st(acx *c, uint64_t off, uint64_t v) {
  __atomic_store_n((volatile uint64_t *)(c->base + off), v, __ATOMIC_RELEASE);
}
/* offsets in this guest's own file (RINGS.md): the same for every guest */
static uint64_t ring(acx *c, unsigned which) { (void)c; return apta_ring_off(which); }
static uint64_t ctl(acx *c) { (void)c; return APTA_GUEST_AREA; }

void acx_heartbeat(acx *c) { st(c, ctl(c) + APTA_CTL_HEARTBEAT, acx_now_ns()); }

static void relax(acx *c, unsigned *spins) {
  acx_heartbeat(c);
  if (++*spins > 64) {
    struct timespec t = {0, 20000};
    nanosleep(&t, 0);
  }
}

static void *hb_main(void *p) {
  acx *c = p;
  while (c->hb_run) {
    acx_heartbeat(c);
    struct timespec t = {0, 2000000};
    nanosleep(&t, 0);
  }
  return 0;
}

/* ---- rings ------------------------------------------------------------------------------------ */
/* 1 if the request ring has room for n slots */
static int room(acx *c, unsigned n) {
  uint64_t r = ring(c, APTA_RING_REQUEST);
  return c->slots - (ld(c, r + APTA_RING_HEAD) - ld(c, r + APTA_RING_TAIL)) >= n;
}

static int wait_room(acx *c, unsigned n, uint64_t deadline) {
  unsigned spins = 0;
  while (!room(c, n)) {
    if (acx_now_ns() > deadline) return ACX_ETIMEOUT;
    relax(c, &spins);
  }
  return ACX_OK;
}

/* one request slot (the caller made sure there is room); returns its seq */
static uint32_t produce(acx *c, const uint8_t *flit) {
  uint64_t r = ring(c, APTA_RING_REQUEST), head = ld(c, r + APTA_RING_HEAD);
  uint8_t slot[APTA_SLOT_BYTES];
  memset(slot, 0, sizeof slot);
  apta_st16(slot, APTA_SLOT_FLIT_BITS, APTA_FLIT_BITS);
  apta_st32(slot, APTA_SLOT_SEQ, c->seq);
  memcpy(slot + APTA_SLOT_FLIT, flit, APTA_FLIT_BYTES);
  /* whole slot in 8-byte stores (the guest's region mapping is uncached MMIO) */
  volatile uint64_t *dst = (volatile uint64_t *)(c->base + apta_slot_off(r, head, c->slots));
  for (unsigned i = 0; i < APTA_SLOT_BYTES / 8; i++) {
    uint64_t w;
    memcpy(&w, slot + 8 * i, 8);
    dst[i] = w;
  }
  st(c, r + APTA_RING_HEAD, head + 1);
  return c->seq++;
}

/* the next slot of a daemon -> guest ring: 1 and (refused, seq, flit) filled, or 0 if empty */
static int consume(acx *c, unsigned which, unsigned *refused, uint32_t *seq, uint8_t *flit) {
  uint64_t r = ring(c, which), tail = ld(c, r + APTA_RING_TAIL);
  if (tail >= ld(c, r + APTA_RING_HEAD)) return 0;
  uint8_t slot[APTA_SLOT_FLIT + APTA_FLIT_BYTES + 8];
  volatile uint64_t *src = (volatile uint64_t *)(c->base + apta_slot_off(r, tail, c->slots));
  for (unsigned i = 0; i < sizeof slot / 8; i++) {
    uint64_t w = src[i];
    memcpy(slot + 8 * i, &w, 8);
  }
  st(c, r + APTA_RING_TAIL, tail + 1);
  *refused = apta_ld16(slot, APTA_SLOT_REFUSED);
  *seq = apta_ld32(slot, APTA_SLOT_SEQ);
  memcpy(flit, slot + APTA_SLOT_FLIT, APTA_FLIT_BYTES);
  return 1;
}

/* ---- cache ------------------------------------------------------------------------------------ */
static acx_entry *lookup(acx *c, uint32_t obj) {
  for (unsigned i = 0; i < ACX_CACHE_ENTRIES; i++)
    if (c->cache[i].valid && c->cache[i].obj == obj) return &c->cache[i];
  return 0;
}
static void drop(acx *c, uint32_t obj) {
  acx_entry *e = lookup(c, obj);
  if (e) e->valid = 0;
}
static void insert(acx *c, uint32_t obj, const void *data, unsigned nlines) {
  acx_entry *e = lookup(c, obj);
  if (!e) {
    for (unsigned i = 0; i < ACX_CACHE_ENTRIES && !e; i++)
      if (!c->cache[i].valid) e = &c->cache[i];
    if (!e) e = &c->cache[c->cache_next++ % ACX_CACHE_ENTRIES]; /* evict round-robin (the copy is
        only dropped locally; the directory still lists us as a sharer and will snoop: harmless) */
  }
  e->obj = obj;
  e->nlines = nlines;
  e->ver = 0;
  e->hits = 0;
  memcpy(e->data, data, (size_t)nlines * ACX_LINE);
  e->valid = 1;
}
int acx_cached(acx *c, uint32_t obj) { return lookup(c, obj) != 0; }

/* ---- invalidations ---------------------------------------------------------------------------- */
int acx_poll(acx *c) {
  unsigned refused, spins = 0;
  uint32_t seq;
  uint8_t f[APTA_FLIT_BYTES];
  int acks = 0;
  while (consume(c, APTA_RING_INVALIDATION, &refused, &seq, f)) {
    int field;
    if (refused || apta_check(f, &field) || apta_opcode(f) != APTA_OP_ObjBISnp) continue;
    apta_ObjBISnp s;
    apta_unpack_ObjBISnp(f, &s);
    c->st.snoops++;
    if (s.epoch != c->epoch || s.server != c->g) { /* a snoop of an earlier life: its copy is gone */
      c->st.old_snoops++;
      continue;
    }
    drop(c, s.obj);
    if (c->inflight && c->inflight_obj == s.obj) c->inflight_snooped = 1;
    apta_ObjBIRsp a = {c->g, c->epoch, s.obj};
    uint8_t out[APTA_FLIT_BYTES];
    apta_pack_ObjBIRsp(out, &a);
    while (!room(c, 1)) relax(c, &spins); /* the daemon always drains the ring */
    produce(c, out);
    c->st.acks++;
    acks++;
  }
  return acks;
}

/* responses left over from an earlier (timed-out) request: nothing is outstanding when a call
 * starts, so everything in the response ring now is stale */
static void drain_stale(acx *c) {
  unsigned refused;
  uint32_t seq;
  uint8_t f[APTA_FLIT_BYTES];
  while (consume(c, APTA_RING_RESPONSE, &refused, &seq, f)) c->st.stale_rsp++;
}

/* An ObjErr flit: the memory server's final answer to this guest's request for obj (1), or a
 * stale one for another object (0, counted). */
static int objerr_for(acx *c, const uint8_t *f, uint32_t obj) {
  apta_ObjErr x;
  apta_unpack_ObjErr(f, &x);
  if (x.obj != obj) { c->st.stale_rsp++; return 0; }
  c->st.objerrs++;
  c->last_code = (int)x.code;
  return 1;
}

static uint64_t deadline_of(acx *c) { return acx_now_ns() + (uint64_t)c->timeout_ms * 1000000ull; }

/* ---- raw slots (tests: forged flits) ----------------------------------------------------------- */
int acx_send_flit(acx *c, const uint8_t *flit, uint32_t *seq) {
  if (wait_room(c, 1, deadline_of(c))) return c->st.timeouts++, ACX_ETIMEOUT;
  *seq = produce(c, flit);
  return ACX_OK;
}

int acx_wait_refusal(acx *c, uint32_t seq, unsigned *code) {
  uint64_t deadline = deadline_of(c);
  unsigned refused, spins = 0;
  uint32_t s;
  uint8_t f[APTA_FLIT_BYTES];
  for (;;) {
    acx_poll(c);
    if (consume(c, APTA_RING_RESPONSE, &refused, &s, f)) {
      if (refused && s == seq) { c->st.refusals++; *code = refused; return ACX_OK; }
      c->st.stale_rsp++;
      continue;
    }
    if (acx_now_ns() > deadline) return c->st.timeouts++, ACX_ETIMEOUT;
    relax(c, &spins);
  }
}

/* ---- init / rejoin ---------------------------------------------------------------------------- */
int acx_init(acx *c, volatile void *base, unsigned guest, int heartbeat_thread) {
  memset(c, 0, sizeof *c);
  c->base = base;
  c->g = guest;
  c->timeout_ms = 5000;
  c->hold_timeout_ms = 600000;
  c->use_cache = 1;
  if (memcmp((const void *)c->base, APTA_MAGIC, APTA_MAGIC_BYTES) ||
      apta_ld32(c->base, APTA_HDR_VERSION) != APTA_LAYOUT_VERSION ||
      guest >= apta_ld32(c->base, APTA_HDR_GUESTS) || apta_ld32(c->base, APTA_HDR_SLOT_BYTES) != APTA_SLOT_BYTES ||
      apta_ld32(c->base, APTA_HDR_GUEST) != guest) /* another guest's file, or the server's */
    return ACX_EREGION;
  c->slots = apta_ld32(c->base, APTA_HDR_RING_SLOTS);
  if (!c->slots || (c->slots & (c->slots - 1)) || c->slots > APTA_MAX_SLOTS) return ACX_EREGION;
  st(c, ctl(c) + APTA_CTL_HEARTBEAT, acx_now_ns());
  apta_st32(c->base, ctl(c) + APTA_CTL_STATE, APTA_GUEST_BOOTING);
  /* an earlier life's leftovers: skip its responses and snoops; a request head that is not within
     S of the daemon's tail is set back to the tail (RINGS.md) */
  uint64_t r = ring(c, APTA_RING_RESPONSE), i = ring(c, APTA_RING_INVALIDATION), q = ring(c, APTA_RING_REQUEST);
  st(c, r + APTA_RING_TAIL, ld(c, r + APTA_RING_HEAD));
  st(c, i + APTA_RING_TAIL, ld(c, i + APTA_RING_HEAD));
  uint64_t h = ld(c, q + APTA_RING_HEAD), t = ld(c, q + APTA_RING_TAIL);
  if (h < t || h - t > c->slots) st(c, q + APTA_RING_HEAD, t);
  c->epoch = apta_ld32(c->base, ctl(c) + APTA_CTL_EPOCH);
  if (heartbeat_thread) {
    pthread_t th;
    c->hb_run = 1;
    if (pthread_create(&th, 0, hb_main, c) == 0)
      c->hb_thread = (unsigned long)th;
    else
      c->hb_run = 0;
  }
  return ACX_OK;
}

void acx_close(acx *c) {
  if (c->hb_run) {
    c->hb_run = 0;
    pthread_join((pthread_t)c->hb_thread, 0);
  }
  apta_st32(c->base, ctl(c) + APTA_CTL_STATE, APTA_GUEST_DOWN);
}

int acx_rejoin(acx *c) {
  uint64_t deadline = deadline_of(c);
  unsigned refused, spins = 0;
  uint32_t seq;
  uint8_t f[APTA_FLIT_BYTES];
  apta_st32(c->base, ctl(c) + APTA_CTL_STATE, APTA_GUEST_BOOTING);
  drain_stale(c);
  if (wait_room(c, 1, deadline)) return c->st.timeouts++, ACX_ETIMEOUT;
  apta_Rejoin m = {c->g, c->epoch};
  apta_pack_Rejoin(f, &m);
  uint32_t my = produce(c, f);
  for (;;) {
    if (consume(c, APTA_RING_RESPONSE, &refused, &seq, f)) {
      int field;
      if (refused) {
        if (seq == my) { c->st.refusals++; c->last_code = (int)refused; return ACX_EREFUSED; }
        continue;
      }
      if (!apta_check(f, &field) && apta_opcode(f) == APTA_OP_RejoinRefused) {
        apta_RejoinRefused r;
        apta_unpack_RejoinRefused(f, &r);
        if (r.server != c->g) continue;
        c->epoch = r.epoch;      /* the last epoch value: never left, fenced until the memory server resets */
        return ACX_EEPOCHS;
      }
      if (apta_check(f, &field) || apta_opcode(f) != APTA_OP_RejoinAck) { c->st.stale_rsp++; continue; }
      apta_RejoinAck a;
      apta_unpack_RejoinAck(f, &a);
      if (a.server != c->g) continue;
      c->epoch = a.epoch;
      for (unsigned k = 0; k < ACX_CACHE_ENTRIES; k++) c->cache[k].valid = 0;
      /* snoops still queued are of the old epoch: acx_poll ignores them */
      apta_st32(c->base, ctl(c) + APTA_CTL_EPOCH, c->epoch);
      apta_st32(c->base, ctl(c) + APTA_CTL_STATE, APTA_GUEST_JOINED);
      acx_heartbeat(c);
      return ACX_OK;
    }
    if (acx_now_ns() > deadline) return c->st.timeouts++, ACX_ETIMEOUT;
    relax(c, &spins);
  }
}

/* ---- get -------------------------------------------------------------------------------------- */
int acx_get(acx *c, uint32_t obj, void *buf, unsigned nlines, int *cached) {
  return acx_get_v(c, obj, 0, buf, nlines, cached);
}

int acx_get_v(acx *c, uint32_t obj, uint64_t version, void *buf, unsigned nlines, int *cached) {
  if (cached) *cached = 0;
  if (!nlines || nlines > ACX_MAX_LINES || version >= (1ull << APTA_P_versionBits)) return ACX_EARG;
  c->st.gets++;
  acx_poll(c); /* snoops first: a copy invalidated by a committed put is never served */
  acx_entry *e = c->use_cache ? lookup(c, obj) : 0;
  /* a versioned get hits only a copy known to be at least that version: a copy older than the
     version named is a miss (the copy's version is the one its own get named, 0 when unknown) */
  if (e && e->nlines == nlines && e->ver >= version) {
    memcpy(buf, e->data, (size_t)nlines * ACX_LINE);
    e->hits++;
    c->st.get_hits++;
    if (cached) *cached = 1;
    return ACX_OK;
  }
  uint64_t deadline = deadline_of(c);
  unsigned refused, spins = 0;
  uint32_t seq, have = 0; /* lines received (each line once: the bitmap below) */
  uint64_t got[(ACX_MAX_LINES + 63) / 64];
  memset(got, 0, ((nlines + 63) / 64) * sizeof got[0]);
  uint8_t f[APTA_FLIT_BYTES];
  /* a versioned get may be held by the memory server until its producer commits (the producer's
     whole run, a re-execution after a crash included): it waits hold_timeout_ms, not timeout_ms */
  if (version) deadline = acx_now_ns() + (uint64_t)c->hold_timeout_ms * 1000000ull;
  unsigned backoff_us = ACX_RETRY_MIN_US;
  drain_stale(c);
  if (wait_room(c, 1, deadline)) return c->st.timeouts++, ACX_ETIMEOUT;
  apta_ObjGet m = {c->g, c->epoch, obj, version};   /* version 0: any (unversioned get) */
  uint8_t req[APTA_FLIT_BYTES];                     /* kept: a GetRetry resends it */
  apta_pack_ObjGet(req, &m);
  c->inflight = 1, c->inflight_obj = obj, c->inflight_snooped = 0;
  uint32_t my = produce(c, req);
  int rc = ACX_ETIMEOUT;
  for (;;) {
    acx_poll(c); /* a get of an object we owe an ack for stalls in the RTL until the ack */
    if (consume(c, APTA_RING_RESPONSE, &refused, &seq, f)) {
      int field;
      spins = 0;
      if (refused) {
        if (seq == my) { c->st.refusals++; c->last_code = (int)refused; rc = ACX_EREFUSED; break; }
        continue;
      }
      if (apta_check(f, &field)) { c->st.stale_rsp++; continue; }
      unsigned op = apta_opcode(f);
      if (op == APTA_OP_ObjData) {
        apta_ObjData d;
        apta_unpack_ObjData(f, &d);
        if (d.obj != obj || d.epoch != c->epoch || d.server != c->g || d.line >= nlines) { c->st.stale_rsp++; continue; }
        memcpy((uint8_t *)buf + (size_t)d.line * ACX_LINE, d.data, ACX_LINE);
        if (!(got[d.line / 64] >> (d.line % 64) & 1)) got[d.line / 64] |= 1ull << (d.line % 64), have++;
        if (have == nlines) { rc = ACX_OK; break; }
      } else if (op == APTA_OP_ObjErr) {
        if (!objerr_for(c, f, obj)) continue;
        rc = ACX_EOBJ;
        break;
      } else if (op == APTA_OP_GetRetry || op == APTA_OP_GetCancelled) {
        apta_GetRetry r; /* the same fields, server epoch obj version, in both */
        apta_unpack_GetRetry(f, &r);
        if (!version || r.obj != obj || r.version != version || r.server != c->g || r.epoch != c->epoch) {
          c->st.stale_rsp++;
          continue;
        }
        if (op == APTA_OP_GetCancelled) { c->st.cancelled++; rc = ACX_ECANCELLED; break; }
        /* the hold table was full: nothing is held; ask again after a bounded back-off */
        c->st.get_retries++;
        uint64_t until = acx_now_ns() + (uint64_t)backoff_us * 1000ull;
        if (until > deadline) { c->st.timeouts++; break; }
        while (acx_now_ns() < until) { acx_poll(c); acx_heartbeat(c); sched_yield(); }
        backoff_us = backoff_us * 2 > ACX_RETRY_MAX_US ? ACX_RETRY_MAX_US : backoff_us * 2;
        if (wait_room(c, 1, deadline)) { c->st.timeouts++; break; }
        my = produce(c, req);
      } else {
        c->st.stale_rsp++;
      }
      continue;
    }
    if (acx_now_ns() > deadline) { c->st.timeouts++; break; }
    relax(c, &spins);
  }
  if (rc == ACX_OK) {
    acx_poll(c);
    if (!c->inflight_snooped) {
      insert(c, obj, buf, nlines);
      acx_entry *n = lookup(c, obj);
      if (n) n->ver = version; /* what the data is known to be at least */
    }
  }
  c->inflight = 0;
  return rc;
}

/* ---- put -------------------------------------------------------------------------------------- */
int acx_put(acx *c, uint32_t obj, const void *data, unsigned nlines, unsigned *retries) {
  if (retries) *retries = 0;
  if (!nlines || nlines > ACX_MAX_LINES) return ACX_EARG;
  c->st.puts++;
  uint32_t txn = c->txn++ & ((1u << APTA_P_txnBits) - 1);
  uint64_t deadline = deadline_of(c);
  unsigned refused, spins = 0, backoff_us = 20;
  uint32_t seq;
  uint8_t f[APTA_FLIT_BYTES];
  drop(c, obj); /* our copy is about to be old */
  for (;;) {
    acx_poll(c);
    drain_stale(c);
    /* PutPrepare + the lines, as fast as the ring takes them: all at once when they fit (the
     * common case), streamed when the object has more lines than the ring has room (msemu:
     * objects of up to 4096 lines, rings of 1024 slots) */
    unsigned chunk = c->slots < 1 + nlines ? c->slots / 2 : 1 + nlines;
    if (wait_room(c, chunk, deadline)) return c->st.timeouts++, ACX_ETIMEOUT;
    apta_PutPrepare p = {c->g, c->epoch, obj, txn};
    apta_pack_PutPrepare(f, &p);
    uint32_t first = produce(c, f), last = first;
    for (unsigned l = 0; l < nlines; l++) {
      if (chunk < 1 + nlines && wait_room(c, 1, deadline)) return c->st.timeouts++, ACX_ETIMEOUT;
      apta_PutLine m = {c->g, c->epoch, obj, txn, l, {0}};
      memcpy(m.data, (const uint8_t *)data + (size_t)l * ACX_LINE, ACX_LINE);
      apta_pack_PutLine(f, &m);
      last = produce(c, f);
    }
    int again = 0;
    for (;;) {
      acx_poll(c);
      if (consume(c, APTA_RING_RESPONSE, &refused, &seq, f)) {
        int field;
        spins = 0;
        if (refused) {
          if (seq - first <= last - first) { c->st.refusals++; c->last_code = (int)refused; return ACX_EREFUSED; }
          continue;
        }
        if (apta_check(f, &field)) { c->st.stale_rsp++; continue; }
        unsigned op = apta_opcode(f);
        if (op == APTA_OP_PutCommit || op == APTA_OP_PutRetry) {
          apta_PutCommit k; /* PutRetry has the same fields */
          if (op == APTA_OP_PutCommit) apta_unpack_PutCommit(f, &k);
          else apta_unpack_PutRetry(f, (apta_PutRetry *)&k);
          if (k.obj != obj || k.txn != txn || k.epoch != c->epoch) { c->st.stale_rsp++; continue; }
          if (op == APTA_OP_PutCommit) {
            acx_poll(c);
            insert(c, obj, data, nlines); /* the writer is the new version's sharer (CORE.md) */
            return ACX_OK;
          }
          c->st.put_retries++;
          if (retries) ++*retries;
          again = 1;
          break;
        } else if (op == APTA_OP_ObjErr) {
          if (!objerr_for(c, f, obj)) continue;
          return ACX_EOBJ;
        }
        c->st.stale_rsp++;
        continue;
      }
      if (acx_now_ns() > deadline) return c->st.timeouts++, ACX_ETIMEOUT;
      relax(c, &spins);
    }
    if (again) { /* staging full: back off, then the same txn again (idempotent in the OPC) */
      uint64_t until = acx_now_ns() + (uint64_t)backoff_us * 1000u;
      while (acx_now_ns() < until) { acx_poll(c); relax(c, &spins); }
      if (backoff_us < 2000) backoff_us *= 2;
      if (acx_now_ns() > deadline) return c->st.timeouts++, ACX_ETIMEOUT;
    }
  }
}

volatile uint8_t *acx_map_region(const char *file, uint64_t *size_out) {
  int fd;
  uint64_t off = 0, size;
  if (file) {
    struct stat sb;
    fd = open(file, O_RDWR);
    if (fd < 0 || fstat(fd, &sb) < 0) { perror(file); exit(2); }
    size = (uint64_t)sb.st_size;
  } else {
    const char *a = getenv("APTA_REGION_ADDR"), *s = getenv("APTA_REGION_SIZE");
    if (!a || !s) { fprintf(stderr, "FAIL: no --region and no APTA_REGION_ADDR/SIZE\n"); exit(2); }
    off = strtoull(a, 0, 0), size = strtoull(s, 0, 0);
    fd = open("/dev/mem", O_RDWR | O_SYNC); /* iomem=relaxed: the region is claimed by the pmem driver */
    if (fd < 0) { perror("/dev/mem"); exit(2); }
  }
  void *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
  if (p == MAP_FAILED) { perror("mmap"); exit(2); }
  if (size_out) *size_out = size;
  return p;
}
