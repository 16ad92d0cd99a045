/* phi.h: shared definitions of the PHI workflow (identify -> {deidentify, anonymize -> analytics}).
 *
 * records  (input, text): clinical records separated by blank lines, "Field: value" header lines
 *          and a free-text "Note:" line that mentions names, dates and phone numbers again.
 * tagged   (identifyPHI): "PHIT" u32 text_len, text, u32 nspans, {u32 start, u32 len, u8 type}...
 *          spans sorted by start, non-overlapping.
 */
#ifndef PHI_H
#define PHI_H
#include <ctype.h>
#include <string.h>

#include "apta_util.h"

enum phi_type { PHI_NAME = 1, PHI_DATE, PHI_PHONE, PHI_SSN, PHI_MRN, PHI_EMAIL, PHI_ADDRESS, PHI_ZIP, PHI_AGE, PHI_NTYPES };
static const char *const phi_type_name[PHI_NTYPES] = {"", "NAME", "DATE", "PHONE", "SSN", "MRN", "EMAIL", "ADDRESS", "ZIP", "AGE"};

typedef struct { uint32_t start, len; uint8_t type; } phi_span;

typedef struct {
  const char *text;
  uint32_t text_len, nspans;
  phi_span *spans;
} phi_tagged;

static inline phi_tagged phi_tagged_read(const uint8_t *p, size_t len) {
  apta_rd r = apta_rd_init(p, len, "tagged");
  apta_rd_magic(&r, "PHIT");
  phi_tagged t;
  t.text_len = apta_rd_u32(&r);
  t.text = (const char *)apta_rd_take(&r, t.text_len);
  t.nspans = apta_rd_u32(&r);
  t.spans = apta_xmalloc(sizeof(phi_span) * (t.nspans + 1));
  for (uint32_t i = 0; i < t.nspans; i++) {
    t.spans[i].start = apta_rd_u32(&r);
    t.spans[i].len = apta_rd_u32(&r);
    t.spans[i].type = apta_rd_u8(&r);
    if (t.spans[i].start + t.spans[i].len > t.text_len || t.spans[i].type >= PHI_NTYPES)
      apta_die("tagged: span %u out of range", i);
  }
  return t;
}

/* The value of header field `field` ("DOB") inside the record text [rec, end): pointer + length. */
static inline const char *phi_field(const char *rec, const char *end, const char *field, size_t *vlen) {
  size_t fl = strlen(field);
  for (const char *l = rec; l < end;) {
    const char *nl = memchr(l, '\n', (size_t)(end - l));
    if (!nl) nl = end;
    if ((size_t)(nl - l) > fl + 1 && memcmp(l, field, fl) == 0 && l[fl] == ':') {
      const char *v = l + fl + 1;
      while (v < nl && *v == ' ') v++;
      *vlen = (size_t)(nl - v);
      return v;
    }
    l = nl + 1;
  }
  *vlen = 0;
  return NULL;
}

/* The same value copied into buf (NUL-terminated, truncated to size-1); "" when absent. */
static inline const char *phi_field_str(const char *rec, const char *end, const char *field, char *buf, size_t size) {
  size_t vl;
  const char *v = phi_field(rec, end, field, &vl);
  if (!v) vl = 0;
  if (vl > size - 1) vl = size - 1;
  if (vl) memcpy(buf, v, vl);
  buf[vl] = 0;
  return buf;
}

/* Next record [*rec, *end) starting at offset *pos of text; 0 when none left. */
static inline int phi_next_record(const char *text, size_t len, size_t *pos, const char **rec, const char **end) {
  size_t p = *pos;
  while (p < len && text[p] == '\n') p++;
  if (p >= len) return 0;
  const char *s = text + p, *e = s;
  while (e < text + len && !(e[0] == '\n' && e + 1 < text + len && e[1] == '\n')) e++;
  if (e < text + len) e++; /* include the record's last newline */
  *rec = s;
  *end = e;
  *pos = (size_t)(e - text);
  return 1;
}
#endif
