/* anonymize: turn the tagged records into a k-anonymous research table. Direct identifiers
 * (name, SSN, phone, e-mail, street) are dropped, the MRN becomes a keyed-hash pseudonym, and the
 * quasi-identifiers (age band, sex, 3-digit ZIP) are generalized until every equivalence class
 * has at least k rows (param k): ZIP3 -> "***", then age band -> "*", then the rows of
 * classes still smaller than k are suppressed. get tagged -> put anonymized
 * (CSV: pid,age_band,sex,zip3,admit_year,dx,sys,dia,hr,glucose). */
#include <stdio.h>
#include <stdlib.h>

#include "apta_store.h"
#include "phi.h"

typedef struct {
  char pid[17], band[16], sex[2], zip3[4], dx[12];
  int admit_year, sys, dia, hr, glucose;
} row;

static int same_class(const row *a, const row *b) {
  return !strcmp(a->band, b->band) && !strcmp(a->sex, b->sex) && !strcmp(a->zip3, b->zip3);
}

static int class_size(const row *rows, size_t n, size_t i) {
  int c = 0;
  for (size_t j = 0; j < n; j++) c += same_class(&rows[i], &rows[j]);
  return c;
}

int apta_function(void) {
  apta_bytes in = apta_get("tagged");
  phi_tagged t = phi_tagged_read(in.data, in.len);
  long k = apta_param_long("k", 3);
  row *rows = NULL;
  size_t n = 0, pos = 0;
  const char *rec, *end;
  while (phi_next_record(t.text, t.text_len, &pos, &rec, &end)) {
    rows = apta_xrealloc(rows, (n + 1) * sizeof *rows);
    row *r = &rows[n++];
    memset(r, 0, sizeof *r);
    size_t vl;
    const char *v;
    char mrn[16] = "", salted[64];
    if ((v = phi_field(rec, end, "MRN", &vl)) && vl < sizeof mrn) memcpy(mrn, v, vl);
    snprintf(salted, sizeof salted, "apta-study-7:%s", mrn);
    snprintf(r->pid, sizeof r->pid, "%016llx", (unsigned long long)apta_fnv1a(salted, strlen(salted)));
    int by = 0, bm = 0, bd = 0, am = 0, ad = 0;
    char fb[256];
    sscanf(phi_field_str(rec, end, "DOB", fb, sizeof fb), "%d-%d-%d", &by, &bm, &bd);
    sscanf(phi_field_str(rec, end, "Admitted", fb, sizeof fb), "%d-%d-%d", &r->admit_year, &am, &ad);
    int age = r->admit_year - by - ((am < bm || (am == bm && ad < bd)) ? 1 : 0);
    if (age < 0) age = 0;
    if (age >= 90) snprintf(r->band, sizeof r->band, "90+");
    else snprintf(r->band, sizeof r->band, "%d-%d", age / 10 % 10 * 10, age / 10 % 10 * 10 + 9);
    {
      const char *f = strstr(phi_field_str(rec, end, "Note", fb, sizeof fb), " year old ");
      r->sex[0] = f && f[10] == 'f' ? 'F' : 'M';
    }
    if ((v = phi_field(rec, end, "Address", &vl)) && vl >= 5) memcpy(r->zip3, v + vl - 5, 3);
    sscanf(phi_field_str(rec, end, "Diagnosis", fb, sizeof fb), "%11s", r->dx);
    sscanf(phi_field_str(rec, end, "Vitals", fb, sizeof fb), "BP %d/%d HR %d Glucose %d", &r->sys, &r->dia, &r->hr, &r->glucose);
  }
  /* generalize until k-anonymous: ZIP3 first, then the age band */
  for (size_t i = 0; i < n; i++)
    if (class_size(rows, n, i) < k) strcpy(rows[i].zip3, "***");
  for (size_t i = 0; i < n; i++)
    if (class_size(rows, n, i) < k) strcpy(rows[i].band, "*");
  int *suppressed = apta_xmalloc(sizeof(int) * (n + 1)); /* classes still below k are dropped */
  for (size_t i = 0; i < n; i++) suppressed[i] = class_size(rows, n, i) < k;
  apta_buf out = {0};
  apta_buf_str(&out, "pid,age_band,sex,zip3,admit_year,dx,sys,dia,hr,glucose\n");
  for (size_t i = 0; i < n; i++) {
    const row *r = &rows[i];
    if (suppressed[i]) continue;
    apta_buf_printf(&out, "%s,%s,%s,%s,%d,%s,%d,%d,%d,%d\n", r->pid, r->band, r->sex, r->zip3, r->admit_year, r->dx, r->sys, r->dia,
                    r->hr, r->glucose);
  }
  apta_put("anonymized", out.data, out.len);
  return 0;
}
