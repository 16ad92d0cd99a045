/* reducer (one instance per row range): sum the partial products' rows [r0,r1) into the final
 * rows of C (merge with a dense accumulator; exact zeros from cancellation are dropped).
 * get shuffle_<j> -> put result_<j>. */
#include <stdio.h>
#include <stdlib.h>

#include "apta_store.h"
#include "csr.h"

static int cmp_u32(const void *a, const void *b) { uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b; return x < y ? -1 : x > y; }

int apta_function(void) {
  int inst = apta_instance();
  char sname[32], rname[32];
  snprintf(sname, sizeof sname, "shuffle_%d", inst);
  snprintf(rname, sizeof rname, "result_%d", inst);
  apta_bytes in = apta_get(sname);
  apta_rd r = apta_rd_init(in.data, in.len, sname);
  apta_rd_magic(&r, "SHUF");
  uint32_t j = apta_rd_u32(&r), r0 = apta_rd_u32(&r), r1 = apta_rd_u32(&r), np = apta_rd_u32(&r);
  if (j != (uint32_t)inst) apta_die("reducer: %s has the wrong index", sname);
  csr *P = apta_xmalloc(sizeof(csr) * (np + 1));
  for (uint32_t p = 0; p < np; p++) {
    P[p] = csr_read(&r);
    if (P[p].rows != r1 - r0 || P[p].cols != P[0].cols) apta_die("reducer: shuffle part %u has the wrong shape", p);
  }
  uint32_t n = P[0].cols, cap = 1024;
  double *acc = apta_xmalloc(8ull * n);
  uint8_t *seen = apta_xmalloc(n);
  uint32_t *cols = apta_xmalloc(4ull * n + 4);
  csr C = csr_alloc(r1 - r0, n, cap);
  for (uint32_t i = 0; i < r1 - r0; i++) {
    uint32_t nc = 0;
    for (uint32_t p = 0; p < np; p++)
      for (uint32_t q = P[p].ptr[i]; q < P[p].ptr[i + 1]; q++) {
        uint32_t c = P[p].col[q];
        if (!seen[c]) { seen[c] = 1; acc[c] = 0; cols[nc++] = c; }
        acc[c] += P[p].val[q];
      }
    qsort(cols, nc, 4, cmp_u32);
    if (C.nnz + nc > cap) {
      while (C.nnz + nc > cap) cap *= 2;
      C.col = apta_xrealloc(C.col, 4ull * cap); C.val = apta_xrealloc(C.val, 8ull * cap);
    }
    for (uint32_t k = 0; k < nc; k++) {
      seen[cols[k]] = 0;
      if (acc[cols[k]] != 0) { C.col[C.nnz] = cols[k]; C.val[C.nnz++] = acc[cols[k]]; }
    }
    C.ptr[i + 1] = C.nnz;
  }
  apta_buf b = {0};
  apta_buf_put(&b, "RSLT", 4);
  apta_buf_u32(&b, j); apta_buf_u32(&b, r0); apta_buf_u32(&b, r1);
  csr_write(&b, &C);
  apta_put(rname, b.data, b.len);
  return 0;
}
