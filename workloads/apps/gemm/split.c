/* split (map side): partition the inner dimension k into `ways` ranges (workflow param, default 2)
 * and give mapper i the columns of A and the rows of B in its range (outer-product formulation:
 * C = sum_i A[:,K_i] B[K_i,:]). get matrices -> put task_0 .. task_<ways-1>. */
#include <stdio.h>

#include "apta_store.h"
#include "csr.h"

int apta_function(void) {
  apta_bytes in = apta_get("matrices");
  apta_rd r = apta_rd_init(in.data, in.len, "matrices");
  apta_rd_magic(&r, "SPMM");
  csr A = csr_read(&r), B = csr_read(&r);
  if (A.cols != B.rows) apta_die("split: A is %ux%u but B is %ux%u", A.rows, A.cols, B.rows, B.cols);
  long ways = apta_param_long("ways", 2);
  for (long t = 0; t < ways; t++) {
    uint32_t k0 = (uint32_t)(A.cols * t / ways), k1 = (uint32_t)(A.cols * (t + 1) / ways);
    csr Ai = csr_alloc(A.rows, A.cols, A.nnz);
    for (uint32_t i = 0; i < A.rows; i++) {
      for (uint32_t p = A.ptr[i]; p < A.ptr[i + 1]; p++)
        if (A.col[p] >= k0 && A.col[p] < k1) { Ai.col[Ai.nnz] = A.col[p]; Ai.val[Ai.nnz++] = A.val[p]; }
      Ai.ptr[i + 1] = Ai.nnz;
    }
    apta_buf b = {0};
    apta_buf_put(&b, "TASK", 4);
    apta_buf_u32(&b, (uint32_t)t); apta_buf_u32(&b, k0); apta_buf_u32(&b, k1);
    csr_write(&b, &Ai);
    csr_write_rows(&b, &B, k0, k1);
    char name[32];
    snprintf(name, sizeof name, "task_%ld", t);
    apta_put(name, b.data, b.len);
    apta_buf_free(&b);
  }
  return 0;
}
