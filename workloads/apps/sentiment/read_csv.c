/* readCSV: parse the RFC 4180 review CSV (quoted fields, doubled quotes, embedded commas) into
 * the binary `reviews` table (unscored). get reviews_csv -> put reviews. */
#include <stdlib.h>

#include "apta_store.h"
#include "reviews.h"

/* Parse one field starting at *p; unquotes into out. Returns the delimiter hit (',', '\n' or 0). */
static int field(const char **p, const char *e, apta_buf *out) {
  out->len = 0;
  const char *s = *p;
  if (s < e && *s == '"') {
    s++;
    for (;;) {
      if (s >= e) apta_die("readCSV: unterminated quoted field");
      if (*s == '"') {
        if (s + 1 < e && s[1] == '"') { apta_buf_u8(out, '"'); s += 2; continue; }
        s++;
        break;
      }
      apta_buf_u8(out, (uint8_t)*s++);
    }
  } else {
    while (s < e && *s != ',' && *s != '\n' && *s != '\r') apta_buf_u8(out, (uint8_t)*s++);
  }
  if (s < e && *s == '\r') s++;
  int d = s < e ? *s : 0;
  if (s < e) s++;
  *p = s;
  return d;
}

static long num(const apta_buf *f, long line) {
  char tmp[32];
  if (f->len == 0 || f->len >= sizeof tmp) apta_die("readCSV: line %ld: bad number", line);
  memcpy(tmp, f->data, f->len);
  tmp[f->len] = 0;
  char *end;
  long v = strtol(tmp, &end, 10);
  if (*end) apta_die("readCSV: line %ld: bad number %s", line, tmp);
  return v;
}

int apta_function(void) {
  apta_bytes in = apta_get("reviews_csv");
  const char *p = (const char *)in.data, *e = p + in.len;
  const char *nl = memchr(p, '\n', in.len);
  if (!nl) apta_die("readCSV: no header line");
  p = nl + 1;
  review *v = NULL;
  char **texts = NULL;
  uint32_t n = 0;
  apta_buf f = {0};
  for (long line = 2; p < e; line++) {
    review rv = {0};
    if (field(&p, e, &f) != ',') apta_die("readCSV: line %ld: expected 5 fields", line);
    rv.id = (uint32_t)num(&f, line);
    if (field(&p, e, &f) != ',') apta_die("readCSV: line %ld: expected 5 fields", line);
    rv.product = (uint32_t)num(&f, line);
    if (field(&p, e, &f) != ',') apta_die("readCSV: line %ld: expected 5 fields", line);
    rv.rating = (uint8_t)num(&f, line);
    if (field(&p, e, &f) != ',' || f.len != 10) apta_die("readCSV: line %ld: bad date", line);
    apta_buf_u8(&f, 0); /* terminate for atoi */
    rv.date = (uint32_t)(atoi((char *)f.data) * 10000 + atoi((char *)f.data + 5) * 100 + atoi((char *)f.data + 8));
    int d = field(&p, e, &f);
    if (d != '\n' && d != 0) apta_die("readCSV: line %ld: more than 5 fields", line);
    v = apta_xrealloc(v, (n + 1) * sizeof *v);
    texts = apta_xrealloc(texts, (n + 1) * sizeof *texts);
    texts[n] = apta_xmalloc(f.len + 1);
    memcpy(texts[n], f.data, f.len);
    rv.text = texts[n];
    rv.text_len = (uint32_t)f.len;
    v[n++] = rv;
  }
  apta_buf out = {0};
  reviews_write(&out, v, n, 0);
  apta_put("reviews", out.data, out.len);
  return 0;
}
