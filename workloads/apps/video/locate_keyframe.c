/* locateKeyFrame: find the scene cuts (the key frames of the transcode) on the uploader's proxy
 * stream: a frame starts a new shot when its 16-bin luma histogram differs from the previous
 * frame's by more than `hist_pct`% of the pixels (default 50) or the mean absolute difference
 * exceeds `mad` (default 24). input preview -> put keyframes. */
#include <stdlib.h>

#include "apta_store.h"
#include "video.h"

int apta_function(void) {
  apta_bytes in = apta_input("preview");
  video v = video_read(in.data, in.len, "preview");
  double hist_frac = (double)apta_param_long("hist_pct", 50) / 100.0, mad_max = (double)apta_param_long("mad", 24);
  size_t np = (size_t)v.w * v.h;
  apta_buf out = {0};
  uint32_t count = 0;
  apta_buf idx = {0};
  unsigned prev[16] = {0};
  for (uint32_t i = 0; i < v.n; i++) {
    const uint8_t *f = v.frames + np * i;
    unsigned hist[16] = {0};
    for (size_t k = 0; k < np; k++) hist[f[k] >> 4]++;
    int cut = i == 0;
    if (i > 0) {
      const uint8_t *g = f - np;
      unsigned long sad = 0, hd = 0;
      for (size_t k = 0; k < np; k++) sad += (unsigned long)abs((int)f[k] - (int)g[k]);
      for (int b = 0; b < 16; b++) hd += (unsigned long)abs((int)hist[b] - (int)prev[b]);
      cut = (double)hd / 2.0 > hist_frac * (double)np || (double)sad / (double)np > mad_max;
    }
    if (cut) { apta_buf_u32(&idx, i); count++; }
    memcpy(prev, hist, sizeof prev);
  }
  apta_buf_put(&out, "KEY1", 4);
  apta_buf_u32(&out, count);
  apta_buf_put(&out, idx.data, idx.len);
  apta_put("keyframes", out.data, out.len);
  return 0;
}
