/* GEMM input generator: `matrices` = sparse A (M x K) and B (K x N), each entry nonzero with
 * probability density_permille/1000, values small nonzero integers (so every product and sum is
 * exact in f64 and the result can be compared exactly). */
#include "csr.h"

static csr random_csr(apta_rng *r, uint32_t rows, uint32_t cols, uint32_t permille) {
  csr m = csr_alloc(rows, cols, rows * cols);
  for (uint32_t i = 0; i < rows; i++) {
    for (uint32_t j = 0; j < cols; j++)
      if (apta_rng_below(r, 1000) < permille) {
        m.col[m.nnz] = j;
        m.val[m.nnz++] = (double)(1 + apta_rng_below(r, 9)) * (apta_rng_below(r, 2) ? 1 : -1);
      }
    m.ptr[i + 1] = m.nnz;
  }
  return m;
}

int gen_main(const apta_gen_args *a) {
  uint32_t M = (uint32_t)apta_gen_long(a, "m", 300), K = (uint32_t)apta_gen_long(a, "k", 300), N = (uint32_t)apta_gen_long(a, "n", 300);
  uint32_t d = (uint32_t)apta_gen_long(a, "density_permille", 108);
  apta_rng r = apta_rng_seed((uint64_t)apta_gen_long(a, "seed", 6));
  csr A = random_csr(&r, M, K, d), B = random_csr(&r, K, N, d);
  apta_buf b = {0};
  apta_buf_put(&b, "SPMM", 4);
  csr_write(&b, &A);
  csr_write(&b, &B);
  apta_gen_write(a, 0, "matrices", b.data, b.len);
  return 0;
}
