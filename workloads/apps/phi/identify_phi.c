/* identifyPHI: find the protected health information in clinical records (HIPAA Safe Harbor
 * identifiers that occur in them): names (patient field, titles "Dr./Mr./Ms./Mrs.", relatives
 * "daughter Ana", and every later mention of the patient's own name tokens), dates, phone numbers,
 * SSNs, medical record numbers, e-mail addresses, street addresses and cities, ZIP codes, ages
 * over 89. get records -> put tagged (the text plus sorted, merged spans). */
#include <stdlib.h>

#include "apta_store.h"
#include "phi.h"

typedef struct { phi_span *v; size_t n, cap; } spans;

static void add(spans *s, size_t start, size_t len, int type) {
  if (!len) return;
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 256;
    s->v = apta_xrealloc(s->v, s->cap * sizeof *s->v);
  }
  s->v[s->n++] = (phi_span){(uint32_t)start, (uint32_t)len, (uint8_t)type};
}

static int cmp(const void *a, const void *b) {
  const phi_span *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start ? 1 : (int)y->len - (int)x->len;
}

static size_t digits(const char *p, const char *e) { size_t n = 0; while (p + n < e && isdigit((unsigned char)p[n])) n++; return n; }
static size_t word(const char *p, const char *e) { size_t n = 0; while (p + n < e && (isalpha((unsigned char)p[n]) || p[n] == '\'' || p[n] == '-')) n++; return n; }
static int lit(const char *p, const char *e, const char *s) { size_t n = strlen(s); return (size_t)(e - p) >= n && memcmp(p, s, n) == 0; }

/* Pattern at p: returns the length matched (0 if none) and the type. */
static size_t pattern(const char *p, const char *e, int *type) {
  size_t d = digits(p, e);
  if (d == 4 && lit(p + 4, e, "-") && digits(p + 5, e) == 2 && lit(p + 7, e, "-") && digits(p + 8, e) == 2) { *type = PHI_DATE; return 10; }
  if (d == 3 && lit(p + 3, e, "-") && digits(p + 4, e) == 2 && lit(p + 6, e, "-") && digits(p + 7, e) == 4) { *type = PHI_SSN; return 11; }
  if (lit(p, e, "(") && digits(p + 1, e) == 3 && lit(p + 4, e, ") ") && digits(p + 6, e) == 3 && lit(p + 9, e, "-") && digits(p + 10, e) == 4) {
    *type = PHI_PHONE; return 14;
  }
  /* e-mail: local part of [A-Za-z0-9._] then @ then a domain */
  size_t n = 0;
  while (p + n < e && (isalnum((unsigned char)p[n]) || p[n] == '.' || p[n] == '_')) n++;
  if (n && p + n < e && p[n] == '@') {
    size_t m = n + 1;
    while (p + m < e && (isalnum((unsigned char)p[m]) || p[m] == '.' || p[m] == '-')) m++;
    while (m > n + 1 && p[m - 1] == '.') m--;
    if (m > n + 1) { *type = PHI_EMAIL; return m; }
  }
  return 0;
}

static const char *const TITLES[] = {"Dr. ", "Mr. ", "Ms. ", "Mrs. "};
static const char *const RELATIVES[] = {"daughter ", "son ", "wife ", "husband ", "sister ", "brother ", "mother ", "father "};

static void scan_record(const char *text, const char *rec, const char *end, spans *s) {
  /* the patient's own name tokens form the record's lexicon */
  const char *lex[8]; size_t lexn[8]; int nlex = 0;
  size_t vl;
  const char *v = phi_field(rec, end, "Patient", &vl);
  for (const char *q = v; v && q < v + vl && nlex < 8;) {
    size_t w = word(q, v + vl);
    if (w) { lex[nlex] = q; lexn[nlex++] = w; add(s, (size_t)(q - text), w, PHI_NAME); q += w; } else q++;
  }
  if ((v = phi_field(rec, end, "MRN", &vl))) add(s, (size_t)(v - text), vl, PHI_MRN);
  if ((v = phi_field(rec, end, "Address", &vl))) {
    /* "12 Oak Street, Springfield, 62704": street and city are ADDRESS, the 5 digits ZIP */
    const char *z = v + vl;
    while (z > v && isdigit((unsigned char)z[-1])) z--;
    size_t street = (size_t)(z - v);
    while (street && (v[street - 1] == ' ' || v[street - 1] == ',')) street--;
    add(s, (size_t)(v - text), street, PHI_ADDRESS);
    if (v + vl - z == 5) add(s, (size_t)(z - text), 5, PHI_ZIP);
  }
  for (const char *p = rec; p < end; p++) {
    if (p > rec && isalnum((unsigned char)p[-1])) continue; /* token starts only */
    int type;
    size_t n = pattern(p, end, &type);
    if (n) { add(s, (size_t)(p - text), n, type); p += n - 1; continue; }
    for (size_t i = 0; i < sizeof TITLES / sizeof *TITLES; i++)
      if (lit(p, end, TITLES[i]) && isupper((unsigned char)p[strlen(TITLES[i])])) {
        const char *w = p + strlen(TITLES[i]);
        add(s, (size_t)(w - text), word(w, end), PHI_NAME);
      }
    for (size_t i = 0; i < sizeof RELATIVES / sizeof *RELATIVES; i++)
      if (lit(p, end, RELATIVES[i]) && isupper((unsigned char)p[strlen(RELATIVES[i])])) {
        const char *w = p + strlen(RELATIVES[i]);
        add(s, (size_t)(w - text), word(w, end), PHI_NAME);
      }
    size_t w = word(p, end);
    if (w && isupper((unsigned char)*p))
      for (int i = 0; i < nlex; i++)
        if (lexn[i] == w && memcmp(lex[i], p, w) == 0) add(s, (size_t)(p - text), w, PHI_NAME);
    /* "93 year old": HIPAA treats ages over 89 as identifiers */
    size_t d = digits(p, end);
    if (d && d <= 3 && lit(p + d, end, " year old") && atoi(p) > 89) add(s, (size_t)(p - text), d, PHI_AGE);
  }
}

int apta_function(void) {
  apta_bytes in = apta_get("records");
  const char *text = (const char *)in.data;
  spans s = {0};
  size_t pos = 0;
  const char *rec, *end;
  while (phi_next_record(text, in.len, &pos, &rec, &end)) scan_record(text, rec, end, &s);
  qsort(s.v, s.n, sizeof *s.v, cmp);
  /* merge overlapping spans (the first, longest one wins its type) */
  size_t m = 0;
  for (size_t i = 0; i < s.n; i++) {
    if (m && s.v[i].start < s.v[m - 1].start + s.v[m - 1].len) {
      uint32_t e = s.v[i].start + s.v[i].len;
      if (e > s.v[m - 1].start + s.v[m - 1].len) s.v[m - 1].len = e - s.v[m - 1].start;
      continue;
    }
    s.v[m++] = s.v[i];
  }
  apta_buf out = {0};
  apta_buf_put(&out, "PHIT", 4);
  apta_buf_u32(&out, (uint32_t)in.len);
  apta_buf_put(&out, text, in.len);
  apta_buf_u32(&out, (uint32_t)m);
  for (size_t i = 0; i < m; i++) {
    apta_buf_u32(&out, s.v[i].start);
    apta_buf_u32(&out, s.v[i].len);
    apta_buf_u8(&out, s.v[i].type);
  }
  apta_put("tagged", out.data, out.len);
  return 0;
}
