/* image.h: objects of the image-prediction workflow.
 * image, resized, rendered: binary PPM (P6, maxval 255).
 * prediction: "PRED" u32 nclasses, u32 top1, nclasses x f32 probability, nclasses x f32 logit. */
#ifndef IMAGE_H
#define IMAGE_H
#include <stdio.h>
#include <stdlib.h>

#include "apta_util.h"

typedef struct { uint32_t w, h; const uint8_t *rgb; } ppm;

static inline ppm ppm_read(const uint8_t *p, size_t len, const char *what) {
  ppm im = {0, 0, NULL};
  unsigned w, h, maxv;
  int off = 0;
  char head[64] = {0};
  memcpy(head, p, len < 63 ? len : 63);
  if (sscanf(head, "P6 %u %u %u%n", &w, &h, &maxv, &off) != 3 || maxv != 255) apta_die("%s: not a P6 PPM", what);
  off++; /* the single whitespace after maxval */
  if ((size_t)off + 3ull * w * h > len) apta_die("%s: truncated PPM", what);
  im.w = w; im.h = h; im.rgb = p + off;
  return im;
}

static inline void ppm_write(apta_buf *b, uint32_t w, uint32_t h, const uint8_t *rgb, const char *comment) {
  if (comment) apta_buf_printf(b, "P6\n# %s\n%u %u\n255\n", comment, w, h);
  else apta_buf_printf(b, "P6\n%u %u\n255\n", w, h);
  apta_buf_put(b, rgb, 3ull * w * h);
}

static const char *const CLASS_NAMES[10] = {"sky", "water", "forest", "desert", "city", "snow", "field", "night", "indoor", "road"};
#endif
