/* apta_store_cxl.c: the CXL backend of the workloads' store (apta_store_cxl.h, qemu-cxl/JOBS.md).
 *
 * get(name): the job's `get <name> <obj> <lines>` directive gives the CXL object and its map
 * entry's size; acx_get (object cache first) fills lines * 64 bytes; line 0 is the object header
 * (magic APTAOBJ1, u64 length, u64 FNV-1a 64 of the data), the data follow. A wrong magic, a
 * length beyond the entry or a digest mismatch (a torn or foreign object) is an error naming the
 * object. put(name): the data are framed the same way into every line of the entry and written
 * with acx_put (PutRetry handled by the library). Each op is logged as history events (get /
 * get_ret with digest and hit, put with version = the run id / put_ack) and a put_us line. */
#define _GNU_SOURCE
#include "apta_store_cxl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apta_store_core.h"
#include "apta_util.h"

static apta_cxl_job *J;

/* allocations of the current job (gets and inputs live until the job ends) */
#define MAXALLOC 512
static void *allocs[MAXALLOC];
static int nallocs;

static void *job_alloc(size_t n) {
  size_t cap = (n + 63) & ~(size_t)63;
  void *p = aligned_alloc(64, cap ? cap : 64);
  if (!p) apta_die("%s: out of memory (%zu bytes)", apta_core_function(), n);
  if (nallocs < MAXALLOC) allocs[nallocs++] = p; /* beyond that: leaked until the process ends */
  return p;
}

uint64_t apta_cxl_fnv(const void *p, size_t n) {
  const uint8_t *b = p;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

void apta_cxl_to_region(volatile uint8_t *dst, const void *src, size_t n) {
  const uint8_t *s = src;
  while (n && ((uintptr_t)dst & 7)) *dst++ = *s++, n--;
  for (; n >= 8; n -= 8, dst += 8, s += 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    *(volatile uint64_t *)dst = w;
  }
  while (n--) *dst++ = *s++;
}

void apta_cxl_from_region(void *dst, const volatile uint8_t *src, size_t n) {
  uint8_t *d = dst;
  while (n && ((uintptr_t)src & 7)) *d++ = *src++, n--;
  for (; n >= 8; n -= 8, src += 8, d += 8) {
    uint64_t w = *(const volatile uint64_t *)src;
    memcpy(d, &w, 8);
  }
  while (n--) *d++ = *src++;
}

void apta_cxl_json_str(char *buf, size_t cap, const char *s) {
  size_t n = strlen(buf);
  for (; *s && n + 8 < cap; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') buf[n++] = '\\', buf[n++] = (char)ch;
    else if (ch < 0x20) n += (size_t)snprintf(buf + n, cap - n, "\\u%04x", ch);
    else buf[n++] = (char)ch;
  }
  buf[n] = 0;
}

static const char *q(char *buf, size_t cap, const char *s) { /* s as a JSON string body */
  buf[0] = 0;
  apta_cxl_json_str(buf, cap, s);
  return buf;
}

static void logline(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logline(const char *fmt, ...) {
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (J->log(J, line)) apta_die("%s: the job's log area is full", apta_core_function());
}

static apta_cxl_decl *find(apta_cxl_decl *d, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(d[i].name, name)) return &d[i];
  return 0;
}

static const char *acx_err(int rc, int code) {
  static char b[96];
  switch (rc) {
  case ACX_ETIMEOUT: return "timeout (no answer: fenced?)";
  case ACX_EREFUSED: snprintf(b, sizeof b, "refused by the daemon (code %d)", code); return b;
  case ACX_EOBJ: snprintf(b, sizeof b, "ObjErr code %d from the memory server", code); return b;
  case ACX_EARG: return "bad size (0 or beyond linesPerObject)";
  case ACX_ECANCELLED: return "cancelled: the version named will never be made (GetCancelled)";
  case ACX_EEPOCHS: return "rejoin refused: the server is at its last epoch (fenced until the memory server is reset)";
  default: snprintf(b, sizeof b, "error %d", rc); return b;
  }
}

static apta_bytes cxl_get(const char *name) {
  const char *fn = apta_core_function();
  apta_cxl_decl *d = find(J->gets, J->ngets, name);
  if (!d) apta_die("%s: get(%s): no get directive maps it to a CXL object", fn, name);
  apta_io(1);
  size_t cap = ((size_t)d->lines + 1) * ACX_LINE; /* one spare line: a zero byte after the data */
  uint8_t *buf = job_alloc(cap);
  char id[512], qn[512], qr[512];
  snprintf(id, sizeof id, "%s/g%u", J->run, J->gk++);
  q(qn, sizeof qn, name), q(qr, sizeof qr, J->run);
  if (d->version)   /* a versioned get: `min` is the commit it names (history.py V1) */
    logline("{\"ev\": \"get\", \"id\": \"%s\", \"run\": \"%s\", \"obj\": \"%s\", \"min\": %llu}",
            q((char[512]){0}, 512, id), qr, qn, (unsigned long long)d->version);
  else
    logline("{\"ev\": \"get\", \"id\": \"%s\", \"run\": \"%s\", \"obj\": \"%s\"}", q((char[512]){0}, 512, id), qr, qn);
  int hit = 0, rc = acx_get_v(J->c, d->obj, d->version, buf, d->lines, &hit);
  if (rc == ACX_ECANCELLED)
    logline("{\"ev\": \"get_ret\", \"id\": \"%s\", \"cancelled\": true}", q((char[512]){0}, 512, id));
  if (rc) apta_die("%s: get(%s): object %u (%u lines): %s", fn, name, d->obj, d->lines, acx_err(rc, J->c->last_code));
  if (memcmp(buf + APTA_OBJF_MAGIC, APTA_OBJ_MAGIC, 8))
    apta_die("%s: get(%s): object %u: bad magic (not an object of the JOBS.md format)", fn, name, d->obj);
  uint64_t len = apta_ld64(buf, APTA_OBJF_LENGTH), want = apta_ld64(buf, APTA_OBJF_DIGEST);
  if (len > ((uint64_t)d->lines - 1) * ACX_LINE)
    apta_die("%s: get(%s): object %u: length %llu exceeds its %u lines", fn, name, d->obj, (unsigned long long)len, d->lines);
  uint64_t got = apta_cxl_fnv(buf + ACX_LINE, len);
  if (got != want)
    apta_die("%s: get(%s): object %u: digest %016llx of the data, header says %016llx (torn or foreign object)", fn, name,
             d->obj, (unsigned long long)got, (unsigned long long)want);
  memset(buf + ACX_LINE + len, 0, cap - ACX_LINE - len);
  if (hit) J->hits++; else J->misses++;
  /* rhead: this guest's request-ring head now, i.e. after every slot it produced before the get
   * returned and before any it produces after; trace validation orders a hit, which no daemon sees,
   * among the daemon's events by it (spec/tla/README.md "The QEMU emulation") */
  uint64_t rhead = apta_ld64(J->c->base, apta_ring_off(APTA_RING_REQUEST) + APTA_RING_HEAD);
  logline("{\"ev\": \"get_ret\", \"id\": \"%s\", \"digest\": \"%016llx\", \"len\": %llu, \"hit\": %s, \"rhead\": %llu}",
          q((char[512]){0}, 512, id), (unsigned long long)got, (unsigned long long)len, hit ? "true" : "false",
          (unsigned long long)rhead);
  /* a kill point that does not depend on timing: the guest holds its first input's copy, mid-run */
  if (J->pause_ms && J->gk == 1) usleep((useconds_t)J->pause_ms * 1000);
  apta_io(0);
  return (apta_bytes){buf + ACX_LINE, (size_t)len};
}

static void cxl_put(const char *name, const void *data, size_t len) {
  const char *fn = apta_core_function();
  apta_cxl_decl *d = find(J->puts, J->nputs, name);
  if (!d) apta_die("%s: put(%s): no put directive maps it to a CXL object", fn, name);
  uint64_t need = 1 + ((uint64_t)len + ACX_LINE - 1) / ACX_LINE;
  if (need > d->lines)
    apta_die("%s: put(%s): %zu bytes need %llu lines, the map entry of object %u has %u", fn, name, len,
             (unsigned long long)need, d->obj, d->lines);
  apta_io(1);
  size_t n = (size_t)d->lines * ACX_LINE;
  uint8_t *buf = aligned_alloc(64, n);
  if (!buf) apta_die("%s: out of memory (%zu bytes)", fn, n);
  memset(buf, 0, n);
  memcpy(buf + APTA_OBJF_MAGIC, APTA_OBJ_MAGIC, 8);
  uint64_t dig = apta_cxl_fnv(data, len);
  apta_st64(buf, APTA_OBJF_LENGTH, (uint64_t)len);
  apta_st64(buf, APTA_OBJF_DIGEST, dig);
  if (len) memcpy(buf + ACX_LINE, data, len);
  char id[512], qid[512], qn[512], qr[512];
  snprintf(id, sizeof id, "%s/p%u", J->run, J->pk++);
  q(qid, sizeof qid, id), q(qn, sizeof qn, name), q(qr, sizeof qr, J->run);
  logline("{\"ev\": \"put\", \"id\": \"%s\", \"run\": \"%s\", \"obj\": \"%s\", \"version\": \"%s\", \"digest\": \"%016llx\"}",
          qid, qr, qn, qr, (unsigned long long)dig);
  unsigned retries = 0;
  uint64_t t0 = acx_now_ns();
  int rc = acx_put(J->c, d->obj, buf, d->lines, &retries);
  uint64_t t1 = acx_now_ns();
  free(buf);
  J->retries += retries;
  if (rc) apta_die("%s: put(%s): object %u (%u lines): %s", fn, name, d->obj, d->lines, acx_err(rc, J->c->last_code));
  J->puts_done++;
  logline("{\"ev\": \"put_ack\", \"id\": \"%s\"}", qid);
  logline("{\"put_us\": %.1f, \"obj\": \"%s\", \"retries\": %u}", (double)(t1 - t0) / 1e3, qn, retries);
  apta_io(0);
}

static apta_bytes cxl_input(const char *name) {
  const char *fn = apta_core_function();
  apta_cxl_decl *d = find(J->inputs, J->ninputs, name);
  if (!d) apta_die("%s: input(%s): no input directive gives its bytes", fn, name);
  apta_io(1);
  uint8_t *buf = job_alloc((size_t)d->len + 1);
  apta_cxl_from_region(buf, J->block + APTA_JOB_AREA_INPUTS + d->off, (size_t)d->len);
  memset(buf + d->len, 0, (((size_t)d->len + 1 + 63) & ~(size_t)63) - (size_t)d->len);
  apta_io(0);
  return (apta_bytes){buf, (size_t)d->len};
}

static void cxl_emit(const char *name, const void *data, size_t len) {
  const char *fn = apta_core_function();
  uint32_t used = apta_ld32((const void *)J->block, APTA_JOBF_EMIT_BYTES);
  uint64_t off = ((uint64_t)used + 7) & ~7ull;
  if (off + len > APTA_JOB_AREA_EMITS_SIZE)
    apta_die("%s: emit(%s): %zu bytes do not fit the emits area (%u of %u bytes used)", fn, name, len, used,
             APTA_JOB_AREA_EMITS_SIZE);
  apta_io(1);
  apta_cxl_to_region(J->block + APTA_JOB_AREA_EMITS + off, data, len);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  apta_st32((void *)J->block, APTA_JOBF_EMIT_BYTES, (uint32_t)(off + len));
  char qn[512];
  logline("{\"emit\": \"%s\", \"off\": %llu, \"len\": %zu}", q(qn, sizeof qn, name), (unsigned long long)off, len);
  apta_io(0);
}

static const apta_backend CXL_BACKEND = {cxl_get, cxl_put, cxl_input, cxl_emit};

void apta_cxl_begin(apta_cxl_job *j, const char *function) {
  J = j;
  nallocs = 0;
  apta_core_begin(&CXL_BACKEND, function);
}

void apta_cxl_end(apta_cxl_job *j) {
  (void)j;
  for (int i = 0; i < nallocs; i++) free(allocs[i]);
  nallocs = 0;
}
