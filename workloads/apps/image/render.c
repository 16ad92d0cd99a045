/* render: draw the prediction as an image: one bar per class (height = probability, the top-1
 * bar highlighted) with the class index under each bar in a 3x5 pixel font, on a W x H canvas
 * (params width, height); the top-1 class and its probability go in the PPM comment.
 * get prediction -> put rendered. */
#include <stdio.h>

#include "apta_store.h"
#include "image.h"

static const uint16_t DIGITS[10] = {0x7B6F, 0x2C97, 0x73E7, 0x73CF, 0x5BC9, 0x79CF, 0x79EF, 0x7249, 0x7BEF, 0x7BCF}; /* 3x5, row-major */

int apta_function(void) {
  apta_bytes in = apta_get("prediction");
  apta_rd r = apta_rd_init(in.data, in.len, "prediction");
  apta_rd_magic(&r, "PRED");
  uint32_t n = apta_rd_u32(&r), top = apta_rd_u32(&r);
  if (n != 10 || top >= n) apta_die("render: bad prediction");
  float p[10];
  for (uint32_t i = 0; i < n; i++) p[i] = apta_rd_f32(&r);
  uint32_t W = (uint32_t)apta_param_long("width", 320), H = (uint32_t)apta_param_long("height", 200);
  uint8_t *px = apta_xmalloc(3ull * W * H);
  memset(px, 245, 3ull * W * H);
  uint32_t slot = W / n, base = H - 12, scale = 3;
  for (uint32_t c = 0; c < n; c++) {
    uint32_t bh = (uint32_t)(p[c] * (float)(base - 8)), x0 = c * slot + slot / 5, x1 = (c + 1) * slot - slot / 5;
    for (uint32_t y = base - bh; y < base; y++)
      for (uint32_t x = x0; x < x1; x++) {
        uint8_t *q = px + 3ull * (y * W + x);
        q[0] = c == top ? 220 : 70; q[1] = c == top ? 60 : 110; q[2] = c == top ? 50 : 180;
      }
    for (uint32_t k = 0; k < 15; k++) /* the digit, scaled to fit the 12-pixel margin */
      if (DIGITS[c] >> (14 - k) & 1)
        for (uint32_t dy = 0; dy < 2; dy++)
          for (uint32_t dx = 0; dx < scale - 1; dx++) {
            uint32_t x = c * slot + slot / 2 - 3 + (k % 3) * (scale - 1) + dx, y = base + 1 + (k / 3) * 2 + dy;
            if (x < W && y < H) memset(px + 3ull * (y * W + x), 20, 3);
          }
  }
  char comment[96];
  snprintf(comment, sizeof comment, "top1 %u %s %.4f", top, CLASS_NAMES[top], p[top]);
  apta_buf b = {0};
  ppm_write(&b, W, H, px, comment);
  apta_put("rendered", b.data, b.len);
  return 0;
}
