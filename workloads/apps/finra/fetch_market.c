/* fetchMarket: download the market-data feed (an external input) and store it as the binary
 * `market` object: symbol table, trading days, one OHLCV bar per symbol and day.
 * input market_feed -> put market. */
#include <stdlib.h>

#include "apta_store.h"
#include "finra.h"

int apta_function(void) {
  apta_bytes in = apta_input("market_feed");
  const char *p = (const char *)in.data, *e = p + in.len;
  const char *nl = memchr(p, '\n', in.len);
  if (!nl) apta_die("fetchMarket: empty feed");
  char (*sym)[8] = NULL;
  uint32_t *days = NULL, nsym = 0, ndays = 0, nbars = 0;
  bar *bars = NULL;
  for (p = nl + 1; p < e; p = nl + 1) {
    nl = memchr(p, '\n', (size_t)(e - p));
    if (!nl) nl = e;
    char lb[256]; /* sscanf on a copy of the line: on the feed itself it would strlen the rest */
    size_t ll = (size_t)(nl - p) < sizeof lb - 1 ? (size_t)(nl - p) : sizeof lb - 1;
    memcpy(lb, p, ll);
    lb[ll] = 0;
    char s[16], date[16];
    bar b;
    double vol;
    if (sscanf(lb, "%15[^,],%15[^,],%lf,%lf,%lf,%lf,%lf", s, date, &b.open, &b.high, &b.low, &b.close, &vol) != 7)
      apta_die("fetchMarket: malformed line %u", nbars + 2);
    b.volume = (uint64_t)vol;
    if (nsym == 0 || strncmp(sym[nsym - 1], s, 8) != 0) {
      sym = apta_xrealloc(sym, 8ull * (nsym + 1));
      memset(sym[nsym], 0, 8);
      memcpy(sym[nsym], s, strnlen(s, 7));
      nsym++;
    }
    uint32_t day = parse_day(date);
    if (nsym == 1) { days = apta_xrealloc(days, 4ull * (ndays + 1)); days[ndays++] = day; }
    else if (days[(nbars) % ndays] != day) apta_die("fetchMarket: symbol %s is not on the common calendar", s);
    bars = apta_xrealloc(bars, sizeof(bar) * (nbars + 1));
    bars[nbars++] = b;
  }
  if (nbars != nsym * ndays) apta_die("fetchMarket: %u bars for %u symbols x %u days", nbars, nsym, ndays);
  apta_buf out = {0};
  apta_buf_put(&out, "MKT1", 4);
  apta_buf_u32(&out, nsym);
  apta_buf_u32(&out, ndays);
  apta_buf_put(&out, sym, 8ull * nsym);
  for (uint32_t i = 0; i < ndays; i++) apta_buf_u32(&out, days[i]);
  for (uint32_t i = 0; i < nbars; i++) {
    apta_buf_f64(&out, bars[i].open); apta_buf_f64(&out, bars[i].high); apta_buf_f64(&out, bars[i].low);
    apta_buf_f64(&out, bars[i].close); apta_buf_u64(&out, bars[i].volume);
  }
  apta_put("market", out.data, out.len);
  return 0;
}
