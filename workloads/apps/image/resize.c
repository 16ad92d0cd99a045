/* resize: area-averaging (anti-aliased) resize of the input image to size x size pixels (param
 * `size`, default 128), the predictor's input resolution. get image -> put resized. */
#include "apta_store.h"
#include "image.h"

int apta_function(void) {
  apta_bytes in = apta_get("image");
  ppm im = ppm_read(in.data, in.len, "image");
  uint32_t s = (uint32_t)apta_param_long("size", 128);
  uint8_t *out = apta_xmalloc(3ull * s * s);
  double sx = (double)im.w / s, sy = (double)im.h / s;
  for (uint32_t y = 0; y < s; y++)
    for (uint32_t x = 0; x < s; x++) {
      double x0 = x * sx, x1 = (x + 1) * sx, y0 = y * sy, y1 = (y + 1) * sy, acc[3] = {0, 0, 0}, area = 0;
      for (uint32_t yy = (uint32_t)y0; yy < im.h && yy < y1; yy++) {
        double wy = (yy + 1 < y1 ? yy + 1 : y1) - (yy > y0 ? yy : y0);
        for (uint32_t xx = (uint32_t)x0; xx < im.w && xx < x1; xx++) {
          double wx = (xx + 1 < x1 ? xx + 1 : x1) - (xx > x0 ? xx : x0), wgt = wx * wy;
          const uint8_t *p = im.rgb + 3ull * (yy * im.w + xx);
          for (int c = 0; c < 3; c++) acc[c] += wgt * p[c];
          area += wgt;
        }
      }
      for (int c = 0; c < 3; c++) out[3ull * (y * s + x) + c] = (uint8_t)(acc[c] / area + 0.5);
    }
  apta_buf b = {0};
  ppm_write(&b, s, s, out, NULL);
  apta_put("resized", b.data, b.len);
  return 0;
}
