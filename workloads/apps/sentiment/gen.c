/* Sentiment input generator: `reviews_csv`, an RFC 4180 CSV of product reviews
 * (review_id,product_id,rating,date,text) whose text is built from phrases that agree with the
 * star rating (with negations such as "not bad"), quoted, with embedded commas and quotes. */
#include "apta_util.h"

static const char *const POS[] = {"great", "excellent", "love it", "works perfectly", "amazing value", "very happy",
                                  "highly recommend", "sturdy and reliable", "fantastic", "not bad at all", "really good"};
static const char *const NEG[] = {"terrible", "broke after a week", "waste of money", "very disappointed", "awful",
                                  "poor quality", "does not work", "not good", "horrible support", "useless", "never again"};
static const char *const NEUTRAL[] = {"arrived on tuesday", "it is blue", "the box was medium sized", "i use it daily",
                                      "bought it for my kitchen", "the manual has twelve pages"};
static const char *const ITEM[] = {"kettle", "charger", "backpack", "lamp", "blender", "keyboard", "tent", "\"premium\" headset"};
#define N(a) (sizeof(a) / sizeof((a)[0]))

int gen_main(const apta_gen_args *a) {
  long n = apta_gen_long(a, "reviews", 2400);
  long products = apta_gen_long(a, "products", 40);
  apta_rng r = apta_rng_seed((uint64_t)apta_gen_long(a, "seed", 2));
  apta_buf b = {0};
  apta_buf_str(&b, "review_id,product_id,rating,date,text\n");
  for (long i = 0; i < n; i++) {
    int rating = 1 + (int)apta_rng_below(&r, 5);
    apta_buf t = {0};
    int phrases = 2 + (int)apta_rng_below(&r, 4);
    apta_buf_printf(&t, "The %s", ITEM[apta_rng_below(&r, N(ITEM))]);
    for (int k = 0; k < phrases; k++) {
      const char *ph;
      uint32_t pick = apta_rng_below(&r, 10);
      if (rating >= 4) ph = pick < 7 ? POS[apta_rng_below(&r, N(POS))] : NEUTRAL[apta_rng_below(&r, N(NEUTRAL))];
      else if (rating <= 2) ph = pick < 7 ? NEG[apta_rng_below(&r, N(NEG))] : NEUTRAL[apta_rng_below(&r, N(NEUTRAL))];
      else ph = pick < 3 ? POS[apta_rng_below(&r, N(POS))] : pick < 6 ? NEG[apta_rng_below(&r, N(NEG))] : NEUTRAL[apta_rng_below(&r, N(NEUTRAL))];
      apta_buf_printf(&t, "%s %s", k ? (apta_rng_below(&r, 3) ? "," : ". Also") : " is", ph);
    }
    apta_buf_str(&t, rating == 5 && apta_rng_below(&r, 2) ? "!!" : ".");
    apta_buf_printf(&b, "%ld,%u,%d,2024-%02u-%02u,\"", 100000 + i, 1 + apta_rng_below(&r, (uint32_t)products), rating,
                    1 + apta_rng_below(&r, 12), 1 + apta_rng_below(&r, 28));
    for (size_t k = 0; k < t.len; k++) {
      if (t.data[k] == '"') apta_buf_u8(&b, '"');
      apta_buf_u8(&b, t.data[k]);
    }
    apta_buf_str(&b, "\"\n");
    apta_buf_free(&t);
  }
  apta_gen_write(a, 0, "reviews_csv", b.data, b.len);
  return 0;
}
