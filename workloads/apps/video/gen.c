/* Video input generator: `video` (store) = raw 8-bit frames made of shots (a brightness gradient
 * per shot, two moving objects, sensor noise) separated by hard cuts; `preview` (external: the
 * uploader's 1/4-scale proxy stream) and the test oracle _truth (the cut frames). */
#include <math.h>
#include <stdlib.h>

#include "video.h"

int gen_main(const apta_gen_args *a) {
  uint32_t w = (uint32_t)apta_gen_long(a, "width", 160), h = (uint32_t)apta_gen_long(a, "height", 120);
  uint32_t n = (uint32_t)apta_gen_long(a, "frames", 104);
  apta_rng r = apta_rng_seed((uint64_t)apta_gen_long(a, "seed", 4));
  uint8_t *f = apta_xmalloc((size_t)w * h * n);
  apta_buf truth = {0};
  uint32_t shot = 0, next_cut = 0;
  double bx = 0, by = 0, vx = 0, vy = 0, base = 0, gx = 0, gy = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (i == next_cut) { /* a new shot */
      apta_buf_printf(&truth, "%u\n", i);
      base = 40 + (shot * 67) % 160;
      gx = (apta_rng_unit(&r) - 0.5) * 0.6; gy = (apta_rng_unit(&r) - 0.5) * 0.6;
      bx = apta_rng_unit(&r) * w; by = apta_rng_unit(&r) * h;
      vx = (apta_rng_unit(&r) - 0.5) * 6; vy = (apta_rng_unit(&r) - 0.5) * 4;
      next_cut = i + 6 + apta_rng_below(&r, 14);
      shot++;
    }
    uint8_t *p = f + (size_t)i * w * h;
    double ox = bx + vx * i, oy = by + vy * i;
    for (uint32_t y = 0; y < h; y++)
      for (uint32_t x = 0; x < w; x++) {
        double v = base + gx * (x - w / 2.0) + gy * (y - h / 2.0);
        double dx = fmod(fabs(x - ox), (double)w), dy = fmod(fabs(y - oy), (double)h);
        if (dx < w / 8.0 && dy < h / 8.0) v += 50;                               /* moving box */
        if ((x - w / 3.0 - 8 * sin(i * 0.3)) * (x - w / 3.0 - 8 * sin(i * 0.3)) + (y - h / 2.0) * (y - h / 2.0) < h * h / 36.0) v -= 30; /* a disc */
        v += (double)apta_rng_below(&r, 7) - 3;
        p[(size_t)y * w + x] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
      }
  }
  apta_buf b = {0};
  video_write(&b, w, h, n, 0, f);
  apta_gen_write(a, 0, "video", b.data, b.len);
  /* the proxy: 4x4 box average */
  uint32_t pw = w / 4, ph = h / 4;
  uint8_t *pv = apta_xmalloc((size_t)pw * ph * n);
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t y = 0; y < ph; y++)
      for (uint32_t x = 0; x < pw; x++) {
        unsigned s = 0;
        for (int k = 0; k < 16; k++) s += f[(size_t)i * w * h + (size_t)(4 * y + k / 4) * w + 4 * x + k % 4];
        pv[(size_t)i * pw * ph + (size_t)y * pw + x] = (uint8_t)((s + 8) / 16);
      }
  apta_buf pb = {0};
  video_write(&pb, pw, ph, n, 0, pv);
  apta_gen_write(a, 1, "preview", pb.data, pb.len);
  apta_gen_write(a, 1, "_truth", truth.data, truth.len);
  return 0;
}
