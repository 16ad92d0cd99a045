/* writeDB: write the scored reviews into a database file: rows sorted by (product, score, id) in
 * 4 KiB slotted pages (header: magic, page no, row count, free offset; slot array of row offsets),
 * followed by an index page of (product, first page, first slot, rows). Emitted externally.
 * get reviews -> emit reviews_db. */
#include <stdlib.h>

#include "apta_store.h"
#include "reviews.h"

#define PAGE 4096

static int cmp(const void *a, const void *b) {
  const review *x = a, *y = b;
  if (x->product != y->product) return x->product < y->product ? -1 : 1;
  if (x->score != y->score) return x->score < y->score ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static void put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }

int apta_function(void) {
  apta_bytes in = apta_get("reviews");
  uint32_t n, scored;
  review *v = reviews_read(in.data, in.len, &n, &scored);
  if (!scored) apta_die("writeDB: reviews are not scored");
  qsort(v, n, sizeof *v, cmp);
  apta_buf db = {0}, idx = {0};
  uint8_t page[PAGE];
  uint32_t pageno = 0, rows = 0, freeoff = PAGE, last_product = UINT32_MAX;
  memset(page, 0, PAGE);
  for (uint32_t i = 0; i <= n; i++) {
    uint32_t rowlen = i < n ? 4 + 4 + 1 + 4 + 4 + 1 + 2 + (v[i].text_len > 1000 ? 1000 : v[i].text_len) : 0;
    if (i == n || 16 + 2 * (rows + 1) + rowlen > freeoff) { /* flush the page */
      memcpy(page, "RVDB", 4);
      put32(page + 4, pageno++);
      put32(page + 8, rows);
      put32(page + 12, freeoff);
      apta_buf_put(&db, page, PAGE);
      memset(page, 0, PAGE);
      rows = 0;
      freeoff = PAGE;
      if (i == n) break;
    }
    if (v[i].product != last_product) {
      last_product = v[i].product;
      apta_buf_u32(&idx, v[i].product);
      apta_buf_u32(&idx, pageno);
      apta_buf_u32(&idx, rows);
    }
    freeoff -= rowlen;
    uint8_t *r = page + freeoff;
    uint16_t tl = (uint16_t)(rowlen - 20);
    put32(r, v[i].id); put32(r + 4, v[i].product); r[8] = v[i].rating; put32(r + 9, v[i].date);
    memcpy(r + 13, &v[i].score, 4); r[17] = v[i].label; r[18] = (uint8_t)tl; r[19] = (uint8_t)(tl >> 8);
    memcpy(r + 20, v[i].text, tl);
    page[16 + 2 * rows] = (uint8_t)freeoff;
    page[17 + 2 * rows] = (uint8_t)(freeoff >> 8);
    rows++;
  }
  apta_buf_str(&db, "RVIX");
  apta_buf_u32(&db, (uint32_t)(idx.len / 12));
  apta_buf_u32(&db, n);
  apta_buf_put(&db, idx.data, idx.len);
  apta_emit("reviews_db", db.data, db.len);
  return 0;
}
