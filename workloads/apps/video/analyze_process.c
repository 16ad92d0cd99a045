/* AnalyzeProcess (one instance per chunk): transcode and analyze a chunk. Transcode: 2x2 box
 * downscale, then intra coding of every 8x8 block as in baseline JPEG (DCT-II, quantization by the
 * standard luminance table scaled to `quality` (default 75), dequantization, inverse DCT); the
 * decoded frames are the output. Analysis per frame: shot number (from the key frames), mean luma,
 * motion energy (mean absolute difference to the previous frame), PSNR of the coded frame, nonzero
 * coefficients. get chunk_<i>, keyframes -> put part_<i>. */
#include <math.h>
#include <stdio.h>

#include "apta_store.h"
#include "video.h"

static const int QTAB[64] = {16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
                             14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
                             49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99};

static double C[8][8]; /* DCT-II basis */

static void dct8(const double in[8], double out[8], int inverse) {
  for (int k = 0; k < 8; k++) {
    double s = 0;
    for (int n = 0; n < 8; n++) s += inverse ? C[n][k] * in[n] : C[k][n] * in[n];
    out[k] = s;
  }
}

/* code one 8x8 block in place; returns the nonzero quantized coefficients */
static int code_block(double b[8][8], const double q[64]) {
  double t[8][8], col[8], res[8];
  for (int y = 0; y < 8; y++) dct8(b[y], t[y], 0);
  for (int x = 0; x < 8; x++) {
    for (int y = 0; y < 8; y++) col[y] = t[y][x];
    dct8(col, res, 0);
    for (int y = 0; y < 8; y++) t[y][x] = res[y];
  }
  int nnz = 0;
  for (int k = 0; k < 64; k++) {
    double c = round(t[k / 8][k % 8] / q[k]);
    nnz += c != 0;
    t[k / 8][k % 8] = c * q[k];
  }
  for (int x = 0; x < 8; x++) {
    for (int y = 0; y < 8; y++) col[y] = t[y][x];
    dct8(col, res, 1);
    for (int y = 0; y < 8; y++) t[y][x] = res[y];
  }
  for (int y = 0; y < 8; y++) dct8(t[y], b[y], 1);
  return nnz;
}

int apta_function(void) {
  int inst = apta_instance();
  char cname[32], pname[32];
  snprintf(cname, sizeof cname, "chunk_%d", inst);
  snprintf(pname, sizeof pname, "part_%d", inst);
  apta_bytes cb = apta_get(cname);
  apta_bytes kb = apta_get("keyframes");
  video v = video_read(cb.data, cb.len, cname);
  apta_rd kr = apta_rd_init(kb.data, kb.len, "keyframes");
  apta_rd_magic(&kr, "KEY1");
  uint32_t nkey = apta_rd_u32(&kr);
  const uint8_t *keys = apta_rd_take(&kr, 4ull * nkey);
  long quality = apta_param_long("quality", 75);
  double scale = quality < 50 ? 5000.0 / quality : 200.0 - 2.0 * quality, q[64];
  for (int k = 0; k < 64; k++) { q[k] = floor((QTAB[k] * scale + 50) / 100); if (q[k] < 1) q[k] = 1; }
  for (int k = 0; k < 8; k++)
    for (int n = 0; n < 8; n++) C[k][n] = (k ? sqrt(0.25) : sqrt(0.125)) * cos((2 * n + 1) * k * 3.14159265358979323846 / 16);

  uint32_t w2 = v.w / 2, h2 = v.h / 2;
  size_t fs = (size_t)w2 * h2;
  uint8_t *out = apta_xmalloc(fs * v.n + 1), *down = apta_xmalloc(fs);
  frame_stat *st = apta_xmalloc(sizeof(frame_stat) * (v.n + 1));
  for (uint32_t i = 0; i < v.n; i++) {
    const uint8_t *f = v.frames + (size_t)v.w * v.h * i;
    for (uint32_t y = 0; y < h2; y++)
      for (uint32_t x = 0; x < w2; x++)
        down[y * w2 + x] = (uint8_t)((f[2 * y * v.w + 2 * x] + f[2 * y * v.w + 2 * x + 1] + f[(2 * y + 1) * v.w + 2 * x] +
                                      f[(2 * y + 1) * v.w + 2 * x + 1] + 2) / 4);
    uint8_t *o = out + fs * i;
    int nnz = 0;
    for (uint32_t by = 0; by < h2; by += 8)
      for (uint32_t bx = 0; bx < w2; bx += 8) {
        double b[8][8];
        for (int y = 0; y < 8; y++)
          for (int x = 0; x < 8; x++) { /* edge replication for partial blocks */
            uint32_t yy = by + y < h2 ? by + y : h2 - 1, xx = bx + x < w2 ? bx + x : w2 - 1;
            b[y][x] = down[yy * w2 + xx] - 128.0;
          }
        nnz += code_block(b, q);
        for (int y = 0; y < 8 && by + y < h2; y++)
          for (int x = 0; x < 8 && bx + x < w2; x++) {
            double px = round(b[y][x] + 128);
            o[(by + y) * w2 + bx + x] = (uint8_t)(px < 0 ? 0 : px > 255 ? 255 : px);
          }
      }
    double sum = 0, se = 0, mot = 0;
    for (size_t k = 0; k < fs; k++) {
      sum += o[k];
      se += ((double)o[k] - down[k]) * ((double)o[k] - down[k]);
      if (i) mot += fabs((double)o[k] - o[k - fs]);
    }
    uint32_t g = v.first + i, shot = 0;
    for (uint32_t k = 0; k < nkey; k++) {
      uint32_t kf = (uint32_t)keys[4 * k] | (uint32_t)keys[4 * k + 1] << 8 | (uint32_t)keys[4 * k + 2] << 16 | (uint32_t)keys[4 * k + 3] << 24;
      if (kf <= g) shot = k;
    }
    st[i] = (frame_stat){g, shot, (float)(sum / fs), (float)(mot / fs), (float)(se > 0 ? 10 * log10(255.0 * 255.0 * fs / se) : 99.0), (uint32_t)nnz};
  }
  apta_buf b = {0};
  apta_buf_put(&b, "PART", 4);
  apta_buf_u32(&b, (uint32_t)inst); apta_buf_u32(&b, v.first); apta_buf_u32(&b, v.n); apta_buf_u32(&b, w2); apta_buf_u32(&b, h2);
  apta_buf_u64(&b, apta_fnv1a(out, fs * v.n));
  apta_buf_put(&b, out, fs * v.n);
  for (uint32_t i = 0; i < v.n; i++) {
    apta_buf_u32(&b, st[i].frame); apta_buf_u32(&b, st[i].shot); apta_buf_f32(&b, st[i].mean); apta_buf_f32(&b, st[i].motion);
    apta_buf_f32(&b, st[i].psnr); apta_buf_u32(&b, st[i].nnz);
  }
  apta_put(pname, b.data, b.len);
  return 0;
}
