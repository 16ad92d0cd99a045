/* csr.h: sparse matrices of the GEMM workflow, compressed sparse rows with f64 values.
 * On the wire: u32 rows, cols, nnz; (rows+1) x u32 row pointers; nnz x u32 column; nnz x f64 value.
 * matrices:  "SPMM" A (M x K), B (K x N)
 * task_<i>:  "TASK" u32 i, k0, k1; A restricted to columns [k0,k1) (M x K), B rows [k0,k1) ((k1-k0) x N)
 * partial_<i>: "PRTL" u32 i; C_i = A[:,k0:k1] B[k0:k1,:] (M x N)
 * shuffle_<j>: "SHUF" u32 j, r0, r1, nparts; nparts x (rows r0..r1 of partial_p) ((r1-r0) x N)
 * result_<j>:  "RSLT" u32 j, r0, r1; rows r0..r1 of C ((r1-r0) x N) */
#ifndef CSR_H
#define CSR_H
#include "apta_util.h"

typedef struct { uint32_t rows, cols, nnz; uint32_t *ptr, *col; double *val; } csr;

static inline csr csr_alloc(uint32_t rows, uint32_t cols, uint32_t cap) {
  csr m = {rows, cols, 0, apta_xmalloc(4ull * (rows + 1)), apta_xmalloc(4ull * cap + 4), apta_xmalloc(8ull * cap + 8)};
  return m;
}

static inline csr csr_read(apta_rd *r) {
  csr m;
  m.rows = apta_rd_u32(r); m.cols = apta_rd_u32(r); m.nnz = apta_rd_u32(r);
  m.ptr = apta_xmalloc(4ull * (m.rows + 1)); m.col = apta_xmalloc(4ull * m.nnz + 4); m.val = apta_xmalloc(8ull * m.nnz + 8);
  for (uint32_t i = 0; i <= m.rows; i++) m.ptr[i] = apta_rd_u32(r);
  for (uint32_t i = 0; i < m.nnz; i++) m.col[i] = apta_rd_u32(r);
  for (uint32_t i = 0; i < m.nnz; i++) m.val[i] = apta_rd_f64(r);
  if (m.ptr[0] != 0 || m.ptr[m.rows] != m.nnz) apta_die("%s: bad CSR row pointers", r->what);
  for (uint32_t i = 0; i < m.rows; i++) if (m.ptr[i] > m.ptr[i + 1]) apta_die("%s: bad CSR row pointers", r->what);
  for (uint32_t i = 0; i < m.nnz; i++) if (m.col[i] >= m.cols) apta_die("%s: column out of range", r->what);
  return m;
}

static inline void csr_write(apta_buf *b, const csr *m) {
  apta_buf_u32(b, m->rows); apta_buf_u32(b, m->cols); apta_buf_u32(b, m->nnz);
  for (uint32_t i = 0; i <= m->rows; i++) apta_buf_u32(b, m->ptr[i]);
  for (uint32_t i = 0; i < m->nnz; i++) apta_buf_u32(b, m->col[i]);
  for (uint32_t i = 0; i < m->nnz; i++) apta_buf_f64(b, m->val[i]);
}

/* rows [r0, r1) of m as a new matrix */
static inline void csr_write_rows(apta_buf *b, const csr *m, uint32_t r0, uint32_t r1) {
  uint32_t base = m->ptr[r0], nnz = m->ptr[r1] - base;
  apta_buf_u32(b, r1 - r0); apta_buf_u32(b, m->cols); apta_buf_u32(b, nnz);
  for (uint32_t i = r0; i <= r1; i++) apta_buf_u32(b, m->ptr[i] - base);
  for (uint32_t i = base; i < base + nnz; i++) apta_buf_u32(b, m->col[i]);
  for (uint32_t i = base; i < base + nnz; i++) apta_buf_f64(b, m->val[i]);
}
#endif
