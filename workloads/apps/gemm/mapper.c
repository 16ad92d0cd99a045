/* mapper (one instance per k range): the partial product C_i = A[:,K_i] B[K_i,:] by Gustavson's
 * row-wise algorithm with a dense accumulator; output rows have sorted columns.
 * get task_<i> -> put partial_<i>. */
#include <stdio.h>
#include <stdlib.h>

#include "apta_store.h"
#include "csr.h"

static int cmp_u32(const void *a, const void *b) { uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b; return x < y ? -1 : x > y; }

int apta_function(void) {
  int inst = apta_instance();
  char tname[32], pname[32];
  snprintf(tname, sizeof tname, "task_%d", inst);
  snprintf(pname, sizeof pname, "partial_%d", inst);
  apta_bytes in = apta_get(tname);
  apta_rd r = apta_rd_init(in.data, in.len, tname);
  apta_rd_magic(&r, "TASK");
  uint32_t t = apta_rd_u32(&r), k0 = apta_rd_u32(&r), k1 = apta_rd_u32(&r);
  (void)t;
  csr A = csr_read(&r), B = csr_read(&r);
  if (B.rows != k1 - k0) apta_die("mapper: task has %u rows of B for range [%u,%u)", B.rows, k0, k1);
  double *acc = apta_xmalloc(8ull * B.cols);
  uint8_t *seen = apta_xmalloc(B.cols);
  uint32_t *cols = apta_xmalloc(4ull * B.cols + 4);
  uint32_t cap = 1024;
  csr C = csr_alloc(A.rows, B.cols, cap);
  for (uint32_t i = 0; i < A.rows; i++) {
    uint32_t nc = 0;
    for (uint32_t p = A.ptr[i]; p < A.ptr[i + 1]; p++) {
      uint32_t k = A.col[p] - k0;
      for (uint32_t q = B.ptr[k]; q < B.ptr[k + 1]; q++) {
        uint32_t j = B.col[q];
        if (!seen[j]) { seen[j] = 1; acc[j] = 0; cols[nc++] = j; }
        acc[j] += A.val[p] * B.val[q];
      }
    }
    qsort(cols, nc, 4, cmp_u32);
    if (C.nnz + nc > cap) {
      while (C.nnz + nc > cap) cap *= 2;
      C.col = apta_xrealloc(C.col, 4ull * cap); C.val = apta_xrealloc(C.val, 8ull * cap);
    }
    for (uint32_t k = 0; k < nc; k++) { C.col[C.nnz] = cols[k]; C.val[C.nnz++] = acc[cols[k]]; seen[cols[k]] = 0; }
    C.ptr[i + 1] = C.nnz;
  }
  apta_buf b = {0};
  apta_buf_put(&b, "PRTL", 4);
  apta_buf_u32(&b, (uint32_t)inst);
  csr_write(&b, &C);
  apta_put(pname, b.data, b.len);
  return 0;
}
