/* apta_util.c: see apta_util.h. */
#include "apta_util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void (*apta_die_handler)(const char *msg);

void apta_die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (apta_die_handler) { /* a runner of many functions in one process: ends the job, not the process */
    static char msg[4096];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    apta_die_handler(msg);
    va_start(ap, fmt); /* the handler returned: fall back to exiting */
  }
  fputs("apta: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(3);
}

void *apta_xmalloc(size_t n) {
  void *p = calloc(1, n ? n : 1);
  if (!p) apta_die("out of memory (%zu bytes)", n);
  return p;
}

void *apta_xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) apta_die("out of memory (%zu bytes)", n);
  return q;
}

double apta_rng_normal(apta_rng *r) {
  double u1 = apta_rng_unit(r), u2 = apta_rng_unit(r);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uint64_t apta_fnv1a(const void *data, size_t len) {
  const uint8_t *p = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

void apta_buf_reserve(apta_buf *b, size_t extra) {
  if (b->len + extra <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra) cap *= 2;
  b->data = apta_xrealloc(b->data, cap);
  b->cap = cap;
}
void apta_buf_put(apta_buf *b, const void *p, size_t n) {
  apta_buf_reserve(b, n);
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
}
void apta_buf_u8(apta_buf *b, uint8_t v) { apta_buf_put(b, &v, 1); }
void apta_buf_u32(apta_buf *b, uint32_t v) {
  uint8_t t[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  apta_buf_put(b, t, 4);
}
void apta_buf_u64(apta_buf *b, uint64_t v) {
  apta_buf_u32(b, (uint32_t)v);
  apta_buf_u32(b, (uint32_t)(v >> 32));
}
void apta_buf_f32(apta_buf *b, float v) { uint32_t u; memcpy(&u, &v, 4); apta_buf_u32(b, u); }
void apta_buf_f64(apta_buf *b, double v) { uint64_t u; memcpy(&u, &v, 8); apta_buf_u64(b, u); }
void apta_buf_str(apta_buf *b, const char *s) { apta_buf_put(b, s, strlen(s)); }
void apta_buf_printf(apta_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  apta_buf_reserve(b, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}
void apta_buf_free(apta_buf *b) { free(b->data); b->data = NULL; b->len = b->cap = 0; }

const uint8_t *apta_rd_take(apta_rd *r, size_t n) {
  if (n > r->len - r->pos)
    apta_die("object %s truncated: need %zu bytes at offset %zu of %zu", r->what, n, r->pos, r->len);
  const uint8_t *p = r->p + r->pos;
  r->pos += n;
  return p;
}
uint8_t apta_rd_u8(apta_rd *r) { return *apta_rd_take(r, 1); }
uint32_t apta_rd_u32(apta_rd *r) {
  const uint8_t *p = apta_rd_take(r, 4);
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
uint64_t apta_rd_u64(apta_rd *r) { uint64_t lo = apta_rd_u32(r); return lo | (uint64_t)apta_rd_u32(r) << 32; }
float apta_rd_f32(apta_rd *r) { uint32_t u = apta_rd_u32(r); float f; memcpy(&f, &u, 4); return f; }
double apta_rd_f64(apta_rd *r) { uint64_t u = apta_rd_u64(r); double d; memcpy(&d, &u, 8); return d; }
void apta_rd_magic(apta_rd *r, const char magic[4]) {
  const uint8_t *p = apta_rd_take(r, 4);
  if (memcmp(p, magic, 4) != 0) apta_die("object %s: bad magic (want %.4s)", r->what, magic);
}

long apta_gen_long(const apta_gen_args *a, const char *key, long def) {
  for (int i = 0; i < a->n; i++)
    if (strcmp(a->k[i], key) == 0) {
      char *end;
      errno = 0;
      long v = strtol(a->v[i], &end, 10);
      if (errno || *end) apta_die("generator parameter %s=%s is not an integer", key, a->v[i]);
      return v;
    }
  return def;
}

void apta_gen_write(const apta_gen_args *a, int external, const char *name, const void *data, size_t len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", external ? a->ext_dir : a->store_dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) apta_die("cannot write %s: %s", path, strerror(errno));
  if (len && fwrite(data, 1, len, f) != len) apta_die("short write to %s", path);
  if (fclose(f)) apta_die("cannot close %s", path);
}
