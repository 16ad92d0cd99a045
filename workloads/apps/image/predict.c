/* predict: a small convolutional classifier over the resized image, with deterministic weights
 * (He-normal from a fixed seed, param `seed`; the weights play the part of the model baked into
 * the function image): conv3x3(3->16)+ReLU, maxpool2, conv3x3(16->32)+ReLU, maxpool2,
 * conv3x3(32->64)+ReLU, global average pool, dense(64->10), softmax.
 * get resized -> put prediction (class probabilities, logits, top-1). */
#include <math.h>

#include "apta_store.h"
#include "image.h"

typedef struct { int c, h, w; float *v; } tensor;

static tensor tnew(int c, int h, int w) { tensor t = {c, h, w, apta_xmalloc(sizeof(float) * (size_t)c * h * w)}; return t; }

static float *he(apta_rng *r, size_t n, int fan_in) {
  float *w = apta_xmalloc(sizeof(float) * n);
  double sd = sqrt(2.0 / fan_in);
  for (size_t i = 0; i < n; i++) w[i] = (float)(apta_rng_normal(r) * sd);
  return w;
}

static tensor conv_relu(tensor x, int co, apta_rng *r) {
  float *w = he(r, (size_t)co * x.c * 9, x.c * 9), *bias = apta_xmalloc(sizeof(float) * co);
  for (int o = 0; o < co; o++) bias[o] = (float)(0.01 * apta_rng_normal(r));
  tensor y = tnew(co, x.h, x.w);
  for (int o = 0; o < co; o++)
    for (int i = 0; i < x.h; i++)
      for (int j = 0; j < x.w; j++) {
        float s = bias[o];
        for (int c = 0; c < x.c; c++) {
          const float *k = w + ((size_t)o * x.c + c) * 9, *in = x.v + (size_t)c * x.h * x.w;
          for (int di = -1; di <= 1; di++) {
            int ii = i + di;
            if (ii < 0 || ii >= x.h) continue;
            for (int dj = -1; dj <= 1; dj++) {
              int jj = j + dj;
              if (jj >= 0 && jj < x.w) s += k[(di + 1) * 3 + dj + 1] * in[ii * x.w + jj];
            }
          }
        }
        y.v[((size_t)o * x.h + i) * x.w + j] = s > 0 ? s : 0;
      }
  return y;
}

static tensor maxpool2(tensor x) {
  tensor y = tnew(x.c, x.h / 2, x.w / 2);
  for (int c = 0; c < x.c; c++)
    for (int i = 0; i < y.h; i++)
      for (int j = 0; j < y.w; j++) {
        const float *p = x.v + ((size_t)c * x.h + 2 * i) * x.w + 2 * j;
        float m = fmaxf(fmaxf(p[0], p[1]), fmaxf(p[x.w], p[x.w + 1]));
        y.v[((size_t)c * y.h + i) * y.w + j] = m;
      }
  return y;
}

int apta_function(void) {
  apta_bytes in = apta_get("resized");
  ppm im = ppm_read(in.data, in.len, "resized");
  apta_rng r = apta_rng_seed((uint64_t)apta_param_long("seed", 42));
  static const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
  tensor x = tnew(3, (int)im.h, (int)im.w);
  for (uint32_t i = 0; i < im.h * im.w; i++)
    for (int c = 0; c < 3; c++) x.v[(size_t)c * im.h * im.w + i] = (im.rgb[3 * i + c] / 255.0f - mean[c]) / sd[c];
  tensor a = maxpool2(conv_relu(x, 16, &r));
  tensor b = maxpool2(conv_relu(a, 32, &r));
  tensor c = conv_relu(b, 64, &r);
  float feat[64], logits[10], probs[10];
  for (int k = 0; k < 64; k++) {
    double s = 0;
    for (int i = 0; i < c.h * c.w; i++) s += c.v[(size_t)k * c.h * c.w + i];
    feat[k] = (float)(s / (c.h * c.w));
  }
  float *fc = he(&r, 640, 64);
  float mx = -INFINITY;
  for (int o = 0; o < 10; o++) {
    float s = 0;
    for (int k = 0; k < 64; k++) s += fc[o * 64 + k] * feat[k];
    logits[o] = s;
    if (s > mx) mx = s;
  }
  double z = 0;
  for (int o = 0; o < 10; o++) z += exp((double)(logits[o] - mx));
  uint32_t top = 0;
  for (int o = 0; o < 10; o++) {
    probs[o] = (float)(exp((double)(logits[o] - mx)) / z);
    if (probs[o] > probs[top]) top = (uint32_t)o;
  }
  apta_buf out = {0};
  apta_buf_put(&out, "PRED", 4);
  apta_buf_u32(&out, 10);
  apta_buf_u32(&out, top);
  for (int o = 0; o < 10; o++) apta_buf_f32(&out, probs[o]);
  for (int o = 0; o < 10; o++) apta_buf_f32(&out, logits[o]);
  apta_put("prediction", out.data, out.len);
  return 0;
}
