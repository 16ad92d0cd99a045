/* aptacxl: the compute server's side of the CXL emulation (qemu-cxl/RINGS.md), in C.
 *
 * A guest maps only its own CXL memory (in QEMU its cxl-type3 device, backed by its own file; a
 * host process playing guest g mmaps guest g's file: the library only needs a pointer to it). It
 * gets objects through its request/response rings, keeps a copy of each in a
 * small object cache, drops a copy on ObjBISnp of its current epoch and acks it (ObjBIRsp), and
 * puts objects with PutPrepare + PutLine * size, retrying the same txn on PutRetry.
 * Offsets and encodings come only from the generated headers build/qemu-cxl/apta_layout.h and
 * build/qemu-cxl/apta_msg.h. Single-threaded use, except the optional heartbeat thread (which only
 * writes the control block's heartbeat). */
#ifndef APTACXL_H
#define APTACXL_H
#include <stdint.h>

#include "apta_layout.h"
#include "apta_msg.h"

#define ACX_LINE 64u
#define ACX_MAX_LINES APTA_P_linesPerObject
#define ACX_CACHE_ENTRIES 64u

/* return codes (0 = ok) */
#define ACX_OK 0
#define ACX_ETIMEOUT (-1)  /* no answer in time (the guest may be fenced: requests of a fenced
                              server are discarded silently; rejoin) */
#define ACX_EREFUSED (-2)  /* the daemon refused the request slot (c->last_code = 1 badFlit, 2 wrongPort) */
#define ACX_EOBJ (-3)      /* ObjErr from the memory server (c->last_code = its code, 4..9) */
#define ACX_EARG (-4)      /* bad argument (size 0 or > linesPerObject) */
#define ACX_EREGION (-5)   /* the region's header is not a serving daemon's */
#define ACX_ECANCELLED (-7) /* GetCancelled: the version a versioned get named will never be made (its
                               workflow was cancelled: POST /v1/cancel); the function fails */
#define ACX_EEPOCHS (-6)   /* RejoinRefused: the server's epoch is the last value (2^epochBits - 1); epochs
                              are never reused, so it stays fenced until the memory server is reset
                              (c->epoch = that epoch) */

/* GetRetry back-off of a versioned get (the hold table was full): 50 us doubling to 5 ms */
#define ACX_RETRY_MIN_US 50u
#define ACX_RETRY_MAX_US 5000u

typedef struct {
  uint32_t obj, nlines, valid;
  uint64_t ver; /* the copy is at least this version (the version its get named; 0: unknown) */
  uint64_t hits;
  uint8_t data[ACX_MAX_LINES * ACX_LINE];
} acx_entry;

typedef struct {
  uint64_t gets, get_hits, puts, put_retries, snoops, acks, old_snoops, stale_rsp, refusals, objerrs,
      timeouts, get_retries, cancelled;
} acx_stats;

typedef struct acx {
  volatile uint8_t *base; /* this guest's own mapped file (offset 0 = its header copy) */
  unsigned g;             /* guest index = compute-server id = ring index */
  uint32_t slots;         /* S, from the region's header */
  uint32_t epoch;         /* from the last RejoinAck */
  uint32_t seq;           /* request slots' running count */
  uint32_t txn;           /* next put transaction id */
  unsigned timeout_ms;    /* per get/put/rejoin (default 5000: above the daemon's lease) */
  unsigned hold_timeout_ms; /* per versioned get (default 600000): held until its producer commits */
  int use_cache;          /* 1 (default): gets are served from the cache while the copy is valid */
  int last_code;          /* the refusal or ObjErr code of the last failed call */
  /* the get in flight: a snoop of its object while it streams means "do not cache the reply" */
  uint32_t inflight_obj;
  int inflight, inflight_snooped;
  acx_entry cache[ACX_CACHE_ENTRIES];
  unsigned cache_next;
  acx_stats st;
  /* heartbeat thread */
  volatile int hb_run;
  unsigned long hb_thread; /* pthread_t */
} acx;

/* Map nothing: `base` points at the guest's mapped file. Checks the header copy (magic, version,
 * slots, flit width, and that the file is guest `guest`'s), skips responses/snoops left in the rings by an earlier life of this guest, repairs
 * a broken request-ring head, writes the heartbeat and state "booting". heartbeat_thread = 1
 * starts a helper thread that writes the heartbeat every 2 ms (the library also beats inside every
 * wait loop). Call acx_rejoin next. */
int acx_init(acx *c, volatile void *base, unsigned guest, int heartbeat_thread);
void acx_close(acx *c); /* stops the heartbeat thread; state "down" */
/* Maps this guest's memory: the file `file` (a host process playing a guest: guest g's own file), or, with file NULL, /dev/mem
   at $APTA_REGION_ADDR for $APTA_REGION_SIZE bytes (in a QEMU guest). Exits with a message on
   failure; *size_out (optional) gets the size. */
volatile uint8_t *acx_map_region(const char *file, uint64_t *size_out);
/* One raw request slot with `flit` (APTA_FLIT_BYTES, not checked: tests forge flits with it) into
 * this guest's own request ring; *seq = its seq. acx_wait_refusal waits for the daemon's refusal
 * of slot `seq` (*code = 1 badFlit, 2 wrongPort); ACX_ETIMEOUT if none came. */
int acx_send_flit(acx *c, const uint8_t *flit, uint32_t *seq);
int acx_wait_refusal(acx *c, uint32_t seq, unsigned *code);
void acx_heartbeat(acx *c);
uint64_t acx_now_ns(void);

/* Rejoin, wait for RejoinAck (its epoch becomes c->epoch), drop the whole cache, state "joined".
 * ACX_EEPOCHS if the memory server answers RejoinRefused (the guest stays fenced, state "booting"). */
int acx_rejoin(acx *c);

/* The object's nlines lines into buf (nlines * 64 bytes): from the cache if a valid copy is held,
 * else ObjGet and the ObjData lines 0..nlines-1 of the current epoch. *cached = 1 for a hit. */
int acx_get(acx *c, uint32_t obj, void *buf, unsigned nlines, int *cached);

/* A versioned get: the object at version `version` or newer, its commit count at the
 * memory server (0: any, = acx_get). A cached copy is used only if its get named at least that
 * version. The memory server holds the get until the version commits (no polling); GetRetry (its
 * hold table full) is resent after a back-off (ACX_RETRY_MIN_US doubling to ACX_RETRY_MAX_US) until
 * hold_timeout_ms; GetCancelled -> ACX_ECANCELLED. */
int acx_get_v(acx *c, uint32_t obj, uint64_t version, void *buf, unsigned nlines, int *cached);

/* PutPrepare(obj, txn), PutLine 0..nlines-1, then PutCommit; PutRetry: the same txn again after a
 * back-off. On commit the writer (a sharer of the new version) keeps the data as its copy.
 * *retries gets the number of PutRetry (may be NULL). */
int acx_put(acx *c, uint32_t obj, const void *data, unsigned nlines, unsigned *retries);

/* Handle every ObjBISnp waiting in the invalidation ring: current epoch: drop the copy, ack;
 * older epochs: ignored. Returns the number of acks sent. Called by get/put too. */
int acx_poll(acx *c);

/* 1 if a valid copy of obj is cached */
int acx_cached(acx *c, uint32_t obj);

#endif
