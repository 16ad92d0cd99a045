/* reviews.h: the `reviews` object of the sentiment workflow (readCSV writes it, sentimentAnalysis
 * rewrites it with scores, publishSNS and writeDB read it):
 *   "REVS" u32 count, u32 scored(0/1), then per review:
 *   u32 id, u32 product, u8 rating, u32 date (yyyymmdd), f32 compound score, u8 label, u32 text_len,
 *   text (UTF-8, unquoted).  label: 0 unscored, 1 positive, 2 negative, 3 neutral. */
#ifndef REVIEWS_H
#define REVIEWS_H
#include "apta_util.h"

enum { LABEL_NONE, LABEL_POS, LABEL_NEG, LABEL_NEU };
static const char *const label_name[] = {"none", "positive", "negative", "neutral"};

typedef struct {
  uint32_t id, product, date, text_len;
  uint8_t rating, label;
  float score;
  const char *text;
} review;

static inline review *reviews_read(const uint8_t *p, size_t len, uint32_t *n, uint32_t *scored) {
  apta_rd r = apta_rd_init(p, len, "reviews");
  apta_rd_magic(&r, "REVS");
  *n = apta_rd_u32(&r);
  *scored = apta_rd_u32(&r);
  review *v = apta_xmalloc(sizeof(review) * (*n + 1));
  for (uint32_t i = 0; i < *n; i++) {
    v[i].id = apta_rd_u32(&r);
    v[i].product = apta_rd_u32(&r);
    v[i].rating = apta_rd_u8(&r);
    v[i].date = apta_rd_u32(&r);
    v[i].score = apta_rd_f32(&r);
    v[i].label = apta_rd_u8(&r);
    v[i].text_len = apta_rd_u32(&r);
    v[i].text = (const char *)apta_rd_take(&r, v[i].text_len);
  }
  return v;
}

static inline void reviews_write(apta_buf *b, const review *v, uint32_t n, uint32_t scored) {
  apta_buf_put(b, "REVS", 4);
  apta_buf_u32(b, n);
  apta_buf_u32(b, scored);
  for (uint32_t i = 0; i < n; i++) {
    apta_buf_u32(b, v[i].id);
    apta_buf_u32(b, v[i].product);
    apta_buf_u8(b, v[i].rating);
    apta_buf_u32(b, v[i].date);
    apta_buf_f32(b, v[i].score);
    apta_buf_u8(b, v[i].label);
    apta_buf_u32(b, v[i].text_len);
    apta_buf_put(b, v[i].text, v[i].text_len);
  }
}
#endif
