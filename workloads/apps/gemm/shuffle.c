/* split (reduce side, the shuffle): partition the rows of every partial product into `ways` row
 * ranges, one per reducer: shuffle_j holds rows [r0,r1) of every partial.
 * get partial_0 .. partial_<ways-1> -> put shuffle_0 .. shuffle_<ways-1>. */
#include <stdio.h>

#include "apta_store.h"
#include "csr.h"

int apta_function(void) {
  long ways = apta_param_long("ways", 2);
  csr *P = apta_xmalloc(sizeof(csr) * (size_t)ways);
  for (long p = 0; p < ways; p++) {
    char name[32];
    snprintf(name, sizeof name, "partial_%ld", p);
    apta_bytes in = apta_get(name);
    apta_rd r = apta_rd_init(in.data, in.len, name);
    apta_rd_magic(&r, "PRTL");
    if (apta_rd_u32(&r) != (uint32_t)p) apta_die("split: %s has the wrong index", name);
    P[p] = csr_read(&r);
    if (P[p].rows != P[0].rows || P[p].cols != P[0].cols) apta_die("split: partials of different shapes");
  }
  for (long j = 0; j < ways; j++) {
    uint32_t r0 = (uint32_t)(P[0].rows * j / ways), r1 = (uint32_t)(P[0].rows * (j + 1) / ways);
    apta_buf b = {0};
    apta_buf_put(&b, "SHUF", 4);
    apta_buf_u32(&b, (uint32_t)j); apta_buf_u32(&b, r0); apta_buf_u32(&b, r1); apta_buf_u32(&b, (uint32_t)ways);
    for (long p = 0; p < ways; p++) csr_write_rows(&b, &P[p], r0, r1);
    char name[32];
    snprintf(name, sizeof name, "shuffle_%ld", j);
    apta_put(name, b.data, b.len);
    apta_buf_free(&b);
  }
  return 0;
}
