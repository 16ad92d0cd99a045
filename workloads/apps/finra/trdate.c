/* trdate (audit rule): trade and settlement dates. Flags trades dated on a weekend and trades
 * whose settlement date is not T+2 business days. get portfolios -> emit audit_trdate. */
#include "apta_store.h"
#include "finra.h"

int apta_function(void) {
  apta_bytes in = apta_get("portfolios");
  portfolios f = portfolios_read(in.data, in.len);
  apta_buf out = {0};
  apta_buf_str(&out, "trade,account,reason\n");
  for (uint32_t i = 0; i < f.ntrades; i++) {
    const trade *t = &f.tr[i];
    const char *why = is_weekend(t->trade_day) ? "weekend trade date"
                      : t->settle_day != add_business_days(t->trade_day, 2) ? "settlement is not T+2" : NULL;
    if (why) apta_buf_printf(&out, "%u,%u,%s\n", t->id, f.acc[t->account].id, why);
  }
  apta_emit("audit_trdate", out.data, out.len);
  return 0;
}
