/* sentimentAnalysis: score every review with a small valence lexicon in the manner of VADER
 * (Hutto & Gilbert 2014): token valences, negation within the three preceding tokens (x -0.74),
 * intensifiers ("very", "really": +0.293 in the token's direction), "!" emphasis, and the
 * normalized compound score x / sqrt(x^2 + 15). Labels: positive >= 0.05, negative <= -0.05.
 * get reviews -> put reviews (the same object rewritten with scores and labels). */
#include <ctype.h>
#include <math.h>

#include "apta_store.h"
#include "reviews.h"

static const struct { const char *w; float v; } LEX[] = {
    {"great", 3.1f}, {"excellent", 3.2f}, {"love", 3.2f}, {"perfectly", 2.7f}, {"amazing", 2.8f}, {"happy", 2.7f},
    {"recommend", 1.5f}, {"sturdy", 1.2f}, {"reliable", 1.7f}, {"fantastic", 3.0f}, {"good", 1.9f}, {"value", 0.9f},
    {"bad", -2.5f}, {"terrible", -2.9f}, {"broke", -1.8f}, {"waste", -1.8f}, {"disappointed", -2.1f}, {"awful", -2.9f},
    {"poor", -2.1f}, {"horrible", -2.6f}, {"useless", -2.0f}, {"never", -0.9f}, {"fatigue", -1.0f}, {"work", 0.3f},
};
static const char *const NEGATORS[] = {"not", "no", "never", "cannot", "dont", "doesnt", "isnt", "wasnt", "does"};
static const char *const BOOST[] = {"very", "really", "highly", "extremely", "so"};
#define N(a) (sizeof(a) / sizeof((a)[0]))

static int in(const char *w, const char *const *set, size_t n) {
  for (size_t i = 0; i < n; i++) if (!strcmp(w, set[i])) return 1;
  return 0;
}

static float valence(const char *w) {
  for (size_t i = 0; i < N(LEX); i++) if (!strcmp(w, LEX[i].w)) return LEX[i].v;
  return 0;
}

static float score(const char *t, uint32_t len) {
  char tok[64][24];
  int ntok = 0, bangs = 0;
  double sum = 0;
  for (uint32_t i = 0; i <= len; i++) {
    int c = i < len ? (unsigned char)t[i] : ' ';
    if (c == '!') bangs++;
    if (isalpha(c) || c == '\'') continue;
    /* token ends at i: find its start */
    uint32_t s = i;
    while (s > 0 && (isalpha((unsigned char)t[s - 1]) || t[s - 1] == '\'')) s--;
    if (s == i) continue;
    char w[24];
    int k = 0;
    for (uint32_t j = s; j < i && k < 23; j++) if (t[j] != '\'') w[k++] = (char)tolower((unsigned char)t[j]);
    w[k] = 0;
    float v = valence(w);
    if (v != 0) {
      /* "does not work": "not" negates; "not bad at all": negated negative becomes mildly positive */
      for (int b = 1; b <= 3 && ntok - b >= 0; b++) {
        if (in(tok[ntok - b], BOOST, N(BOOST)) && b == 1) v += v > 0 ? 0.293f : -0.293f;
        if (in(tok[ntok - b], NEGATORS, N(NEGATORS)) && strcmp(tok[ntok - b], "does")) { v *= -0.74f; break; }
      }
      sum += v;
    }
    if (ntok == 64) { memmove(tok, tok + 1, sizeof tok[0] * 63); ntok = 63; }
    memcpy(tok[ntok++], w, (size_t)k + 1);
  }
  if (sum != 0) sum += (sum > 0 ? 0.292 : -0.292) * (bangs > 4 ? 4 : bangs);
  return (float)(sum / sqrt(sum * sum + 15.0));
}

int apta_function(void) {
  apta_bytes in = apta_get("reviews");
  uint32_t n, scored;
  review *v = reviews_read(in.data, in.len, &n, &scored);
  for (uint32_t i = 0; i < n; i++) {
    v[i].score = score(v[i].text, v[i].text_len);
    v[i].label = v[i].score >= 0.05f ? LABEL_POS : v[i].score <= -0.05f ? LABEL_NEG : LABEL_NEU;
  }
  apta_buf out = {0};
  reviews_write(&out, v, n, 1);
  apta_put("reviews", out.data, out.len);
  return 0;
}
