/* analytics: cohort statistics over the anonymized table: rows per diagnosis with the mean and
 * standard deviation of systolic pressure and glucose, the share with stage-2 hypertension
 * (systolic >= 140), rows per age band, and the smallest equivalence class (the k actually
 * achieved). get anonymized -> put analytics (text report). */
#include <math.h>
#include <stdio.h>

#include "apta_store.h"
#include "apta_util.h"

#define MAXG 64
typedef struct { char key[32]; long n; double s1, s2, g1, g2; long htn; } group;

static group *lookup(group *g, int *ng, const char *key) {
  for (int i = 0; i < *ng; i++)
    if (!strcmp(g[i].key, key)) return &g[i];
  if (*ng == MAXG) apta_die("analytics: too many groups");
  group *x = &g[(*ng)++];
  memset(x, 0, sizeof *x);
  snprintf(x->key, sizeof x->key, "%s", key);
  return x;
}

int apta_function(void) {
  apta_bytes in = apta_get("anonymized");
  group dx[MAXG], band[MAXG], cls[MAXG * 4];
  int ndx = 0, nband = 0, ncls = 0;
  const char *p = (const char *)in.data, *e = p + in.len;
  const char *nl = memchr(p, '\n', (size_t)(e - p));
  long rows = 0;
  for (p = nl ? nl + 1 : e; p < e; p = nl + 1) {
    nl = memchr(p, '\n', (size_t)(e - p));
    if (!nl) break;
    char line[256];
    size_t len = (size_t)(nl - p) < sizeof line - 1 ? (size_t)(nl - p) : sizeof line - 1;
    memcpy(line, p, len);
    line[len] = 0;
    char pid[20], b[8], sex[4], zip[8], code[16];
    int year, sys, dia, hr, glu;
    if (sscanf(line, "%19[^,],%7[^,],%3[^,],%7[^,],%d,%15[^,],%d,%d,%d,%d", pid, b, sex, zip, &year, code, &sys, &dia, &hr, &glu) != 10)
      apta_die("analytics: malformed row %ld: %s", rows + 1, line);
    rows++;
    group *g = lookup(dx, &ndx, code);
    g->n++; g->s1 += sys; g->s2 += (double)sys * sys; g->g1 += glu; g->g2 += (double)glu * glu; g->htn += sys >= 140;
    lookup(band, &nband, b)->n++;
    char ck[32];
    snprintf(ck, sizeof ck, "%s|%s|%s", b, sex, zip);
    lookup(cls, &ncls, ck)->n++;
  }
  apta_buf out = {0};
  apta_buf_printf(&out, "rows %ld\n", rows);
  for (int i = 0; i < ndx; i++) {
    group *g = &dx[i];
    double ms = g->s1 / g->n, mg = g->g1 / g->n;
    apta_buf_printf(&out, "dx %s n %ld sys_mean %.2f sys_sd %.2f glucose_mean %.2f glucose_sd %.2f htn_share %.3f\n", g->key, g->n, ms,
                    sqrt(fmax(0, g->s2 / g->n - ms * ms)), mg, sqrt(fmax(0, g->g2 / g->n - mg * mg)), (double)g->htn / g->n);
  }
  for (int i = 0; i < nband; i++) apta_buf_printf(&out, "age_band %s n %ld\n", band[i].key, band[i].n);
  long kmin = rows;
  for (int i = 0; i < ncls; i++) if (cls[i].n < kmin) kmin = cls[i].n;
  apta_buf_printf(&out, "classes %d k_min %ld\n", ncls, kmin);
  apta_put("analytics", out.data, out.len);
  return 0;
}
