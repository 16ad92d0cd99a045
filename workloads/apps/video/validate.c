/* validate: check the analyzed parts before concatenation: same geometry, contiguous frame
 * ranges in chunk order, checksums that match the frames, a minimum coding quality (mean PSNR of
 * every part >= `min_psnr`, default 28 dB). get part_0 .. part_<ways-1> -> put manifest. */
#include <stdio.h>

#include "apta_store.h"
#include "video.h"

int apta_function(void) {
  long ways = apta_param_long("ways", 2);
  double min_psnr = (double)apta_param_long("min_psnr", 28);
  part *p = apta_xmalloc(sizeof(part) * (size_t)ways);
  for (long i = 0; i < ways; i++) {
    char name[32];
    snprintf(name, sizeof name, "part_%ld", i);
    apta_bytes b = apta_get(name);
    p[i] = part_read(b.data, b.len, name);
  }
  uint32_t ok = 1, total = 0;
  for (long i = 0; i < ways; i++) {
    if (p[i].chunk != (uint32_t)i || p[i].w != p[0].w || p[i].h != p[0].h) ok = 0;
    if (i && p[i].first != p[i - 1].first + p[i - 1].n) ok = 0;
    if (apta_fnv1a(p[i].frames, (size_t)p[i].w * p[i].h * p[i].n) != p[i].checksum) ok = 0;
    double ps = 0;
    for (uint32_t k = 0; k < p[i].n; k++) ps += p[i].stats[k].psnr;
    if (p[i].n && ps / p[i].n < min_psnr) ok = 0;
    total += p[i].n;
  }
  if (!ok) fprintf(stderr, "validate: parts failed validation\n");
  apta_buf m = {0};
  apta_buf_put(&m, "MANI", 4);
  apta_buf_u32(&m, (uint32_t)ways); apta_buf_u32(&m, total); apta_buf_u32(&m, p[0].w); apta_buf_u32(&m, p[0].h); apta_buf_u32(&m, ok);
  for (long i = 0; i < ways; i++) { apta_buf_u32(&m, p[i].first); apta_buf_u32(&m, p[i].n); apta_buf_u64(&m, p[i].checksum); }
  apta_put("manifest", m.data, m.len);
  return 0;
}
