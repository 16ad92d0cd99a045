/* Image input generator: `image`, a width x height RGB PPM of a procedural landscape (sky
 * gradient, sun, value-noise hills, a lake, houses). */
#include <math.h>

#include "image.h"

static double lattice(uint32_t x, uint32_t y, uint64_t seed) {
  apta_rng r = apta_rng_seed(seed ^ ((uint64_t)x * 73856093u) ^ ((uint64_t)y * 19349663u << 20));
  return apta_rng_unit(&r);
}
static double noise(double x, double y, uint64_t seed) { /* bilinear value noise */
  uint32_t xi = (uint32_t)x, yi = (uint32_t)y;
  double fx = x - xi, fy = y - yi;
  double a = lattice(xi, yi, seed), b = lattice(xi + 1, yi, seed), c = lattice(xi, yi + 1, seed), d = lattice(xi + 1, yi + 1, seed);
  return (a * (1 - fx) + b * fx) * (1 - fy) + (c * (1 - fx) + d * fx) * fy;
}

int gen_main(const apta_gen_args *a) {
  uint32_t w = (uint32_t)apta_gen_long(a, "width", 1024), h = (uint32_t)apta_gen_long(a, "height", 880);
  uint64_t seed = (uint64_t)apta_gen_long(a, "seed", 5);
  uint8_t *px = apta_xmalloc(3ull * w * h);
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w; x++) {
      double u = (double)x / w, v = (double)y / h, rgb[3];
      double hill = 0.55 + 0.12 * (noise(u * 6, 0.5, seed) - 0.5) + 0.05 * (noise(u * 24, 1.5, seed) - 0.5);
      if (v < hill) { /* sky with a sun */
        rgb[0] = 90 + 100 * v; rgb[1] = 140 + 80 * v; rgb[2] = 235;
        double d = hypot(u - 0.78, (v - 0.18) * h / w);
        if (d < 0.05) { rgb[0] = 255; rgb[1] = 236; rgb[2] = 150; }
      } else if (v > 0.8 && fabs(u - 0.35) < 0.2 * (1 - (v - 0.8) * 2)) { /* lake */
        double ripple = 12 * noise(u * 80, v * 20, seed + 1);
        rgb[0] = 40 + ripple; rgb[1] = 90 + ripple; rgb[2] = 170 + ripple;
      } else { /* grass with texture */
        double t = noise(u * 60, v * 60, seed + 2);
        rgb[0] = 50 + 40 * t; rgb[1] = 120 + 70 * t; rgb[2] = 40 + 20 * t;
      }
      for (int k = 0; k < 4; k++) { /* houses */
        double hx = 0.1 + 0.2 * k, hy = 0.62;
        if (u > hx && u < hx + 0.06 && v > hy && v < hy + 0.08) { rgb[0] = 180 - 30 * k; rgb[1] = 70 + 20 * k; rgb[2] = 60; }
      }
      for (int c = 0; c < 3; c++) px[3ull * (y * w + x) + c] = (uint8_t)(rgb[c] < 0 ? 0 : rgb[c] > 255 ? 255 : rgb[c]);
    }
  apta_buf b = {0};
  ppm_write(&b, w, h, px, NULL);
  apta_gen_write(a, 0, "image", b.data, b.len);
  return 0;
}
