/* apta_util.h: small helpers shared by the functions and the input generators of workloads/:
 * a deterministic PRNG, a growable byte buffer and a bounds-checked reader for the binary object
 * formats, checked allocation, and the generators' command line. Not part of the store API. */
#ifndef APTA_UTIL_H
#define APTA_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

_Noreturn void apta_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* NULL (default): apta_die prints "apta: <msg>" on stderr and exits with status 3. A process that
 * runs many functions (qemu-cxl/guest/aptarun.c) sets it to a handler that must not return
 * (it longjmps out of the failed function). */
extern void (*apta_die_handler)(const char *msg);
void *apta_xmalloc(size_t n);  /* zeroed; dies on failure */
void *apta_xrealloc(void *p, size_t n);

/* splitmix64: deterministic across platforms (no libc rand). */
typedef struct { uint64_t s; } apta_rng;
static inline uint64_t apta_rng_next(apta_rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static inline uint32_t apta_rng_below(apta_rng *r, uint32_t n) { return (uint32_t)(apta_rng_next(r) % n); }
static inline double apta_rng_unit(apta_rng *r) { return (double)(apta_rng_next(r) >> 11) * 0x1.0p-53; }
static inline apta_rng apta_rng_seed(uint64_t seed) { apta_rng r = {seed * 0xD1B54A32D192ED03ull + 1}; return r; }
double apta_rng_normal(apta_rng *r); /* Box-Muller, deterministic */

uint64_t apta_fnv1a(const void *data, size_t len);

/* Growable byte buffer, little-endian encoders. */
typedef struct { uint8_t *data; size_t len, cap; } apta_buf;
void apta_buf_reserve(apta_buf *b, size_t extra);
void apta_buf_put(apta_buf *b, const void *p, size_t n);
void apta_buf_u8(apta_buf *b, uint8_t v);
void apta_buf_u32(apta_buf *b, uint32_t v);
void apta_buf_u64(apta_buf *b, uint64_t v);
void apta_buf_f32(apta_buf *b, float v);
void apta_buf_f64(apta_buf *b, double v);
void apta_buf_str(apta_buf *b, const char *s); /* no terminator */
void apta_buf_printf(apta_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void apta_buf_free(apta_buf *b);

/* Bounds-checked reader over an object; `what` names the object in error messages. */
typedef struct { const uint8_t *p; size_t len, pos; const char *what; } apta_rd;
static inline apta_rd apta_rd_init(const uint8_t *p, size_t len, const char *what) {
  apta_rd r = {p, len, 0, what}; return r;
}
const uint8_t *apta_rd_take(apta_rd *r, size_t n);
uint8_t apta_rd_u8(apta_rd *r);
uint32_t apta_rd_u32(apta_rd *r);
uint64_t apta_rd_u64(apta_rd *r);
float apta_rd_f32(apta_rd *r);
double apta_rd_f64(apta_rd *r);
void apta_rd_magic(apta_rd *r, const char magic[4]);

/* Generators: `gen <store-dir> <external-dir> key=value...`; gen_main() is defined by each app. */
typedef struct { int n; char **k; char **v; const char *store_dir, *ext_dir; } apta_gen_args;
long apta_gen_long(const apta_gen_args *a, const char *key, long def);
void apta_gen_write(const apta_gen_args *a, int external, const char *name, const void *data, size_t len);
int gen_main(const apta_gen_args *a);

#ifdef __cplusplus
}
#endif
#endif
