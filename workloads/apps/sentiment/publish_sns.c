/* publishSNS: publish a notification per strongly negative review (compound <= threshold, param
 * neg_threshold_milli, default -500) and one per-product digest (reviews, mean score, negative
 * share) to the "review-alerts" topic: SNS publish requests as JSON lines, emitted externally.
 * get reviews -> emit sns_messages. */
#include <stdlib.h>

#include "apta_store.h"
#include "reviews.h"

int apta_function(void) {
  apta_bytes in = apta_get("reviews");
  uint32_t n, scored;
  review *v = reviews_read(in.data, in.len, &n, &scored);
  if (!scored) apta_die("publishSNS: reviews are not scored");
  double thr = (double)apta_param_long("neg_threshold_milli", -500) / 1000.0;
  uint32_t maxp = 0;
  for (uint32_t i = 0; i < n; i++) if (v[i].product > maxp) maxp = v[i].product;
  double *sum = apta_xmalloc(sizeof(double) * (maxp + 1));
  uint32_t *cnt = apta_xmalloc(sizeof(uint32_t) * (maxp + 1)), *neg = apta_xmalloc(sizeof(uint32_t) * (maxp + 1));
  apta_buf out = {0};
  for (uint32_t i = 0; i < n; i++) {
    sum[v[i].product] += v[i].score;
    cnt[v[i].product]++;
    neg[v[i].product] += v[i].label == LABEL_NEG;
    if (v[i].score > thr) continue;
    apta_buf_printf(&out, "{\"TopicArn\": \"arn:aws:sns:us-east-1:000000000000:review-alerts\", \"Subject\": \"negative review\", "
                          "\"Message\": {\"review\": %u, \"product\": %u, \"rating\": %u, \"score\": %.4f, \"excerpt\": \"",
                    v[i].id, v[i].product, v[i].rating, v[i].score);
    for (uint32_t k = 0; k < v[i].text_len && k < 60; k++) {
      char c = v[i].text[k];
      if (c == '"' || c == '\\') apta_buf_u8(&out, '\\');
      apta_buf_u8(&out, (uint8_t)c);
    }
    apta_buf_str(&out, "\"}}\n");
  }
  for (uint32_t p = 0; p <= maxp; p++)
    if (cnt[p])
      apta_buf_printf(&out, "{\"TopicArn\": \"arn:aws:sns:us-east-1:000000000000:review-alerts\", \"Subject\": \"digest\", "
                            "\"Message\": {\"product\": %u, \"reviews\": %u, \"mean_score\": %.4f, \"negative_share\": %.4f}}\n",
                      p, cnt[p], sum[p] / cnt[p], (double)neg[p] / cnt[p]);
  apta_emit("sns_messages", out.data, out.len);
  return 0;
}
