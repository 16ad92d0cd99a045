/* volume (audit rule): unusual trading volume. Flags every symbol-day whose volume exceeds
 * `ratio_pct`% (default 300) of the trailing `window`-day mean (default 20), from the market data.
 * get market -> emit audit_volume (CSV symbol,date,volume,trailing_mean). */
#include "apta_store.h"
#include "finra.h"

int apta_function(void) {
  apta_bytes in = apta_get("market");
  market m = market_read(in.data, in.len);
  long window = apta_param_long("window", 20);
  double ratio = (double)apta_param_long("ratio_pct", 300) / 100.0;
  apta_buf out = {0};
  apta_buf_str(&out, "symbol,date,volume,trailing_mean\n");
  for (uint32_t s = 0; s < m.nsym; s++) {
    const bar *b = m.bars + (size_t)s * m.ndays;
    double sum = 0;
    for (uint32_t i = 0; i < m.ndays; i++) {
      if (i >= (uint32_t)window) {
        double mean = sum / (double)window;
        if ((double)b[i].volume > ratio * mean) {
          int y, mo, d;
          day_to_ymd(m.day[i], &y, &mo, &d);
          apta_buf_printf(&out, "%.8s,%04d-%02d-%02d,%llu,%.0f\n", m.sym + 8ull * s, y, mo, d, (unsigned long long)b[i].volume, mean);
        }
        sum -= (double)b[i - (uint32_t)window].volume;
      }
      sum += (double)b[i].volume;
    }
  }
  apta_emit("audit_volume", out.data, out.len);
  return 0;
}
