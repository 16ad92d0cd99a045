/* FINRA input generator: two external feeds (the fetch functions download them in the real app).
 *   market_feed    CSV symbol,date,open,high,low,close,volume (business days)
 *   portfolio_feed CSV lines A,account,cash,loan | P,account,symbol,qty,mark | T,id,account,symbol,
 *                  side,qty,price,lastpx,trade_date,settle_date
 * with violations injected at fixed strides, counted in the test oracle _truth (never read by a
 * function): volume spikes, weekend trade dates / wrong settlement, last price off by 8%, invalid
 * sides and oversold positions. */
#include <math.h>

#include "finra.h"

int gen_main(const apta_gen_args *a) {
  long nsym = apta_gen_long(a, "symbols", 100), ndays = apta_gen_long(a, "days", 60);
  long naccounts = apta_gen_long(a, "accounts", 400), ntrades = apta_gen_long(a, "trades", 8000);
  apta_rng r = apta_rng_seed((uint64_t)apta_gen_long(a, "seed", 3));
  char (*sym)[8] = apta_xmalloc(8 * (size_t)nsym);
  double *last = apta_xmalloc(sizeof(double) * (size_t)nsym);
  uint32_t *days = apta_xmalloc(4 * (size_t)ndays);
  uint32_t d = ymd_to_day(2024, 1, 2);
  for (long i = 0; i < ndays; i++) { while (is_weekend(d)) d++; days[i] = d++; }
  long spikes = 0;
  apta_buf m = {0};
  apta_buf_str(&m, "symbol,date,open,high,low,close,volume\n");
  for (long s = 0; s < nsym; s++) {
    snprintf(sym[s], 8, "%c%c%c%c", 'A' + (int)(s / 676 % 26), 'A' + (int)(s / 26 % 26), 'A' + (int)(s % 26), 'X' + (int)(s % 3));
    double px = 10 + 490 * apta_rng_unit(&r), base = 1e5 + 5e6 * apta_rng_unit(&r);
    for (long i = 0; i < ndays; i++) {
      double open = px, close = px * (1 + 0.02 * (apta_rng_unit(&r) - 0.5) * 2);
      double hi = fmax(open, close) * (1 + 0.01 * apta_rng_unit(&r)), lo = fmin(open, close) * (1 - 0.01 * apta_rng_unit(&r));
      double vol = base * (1 + 0.3 * (2 * apta_rng_unit(&r) - 1));
      if (i >= 20 && (s * 31 + i * 17) % 97 == 0) { vol *= 6; spikes++; }
      int y, mo, dd;
      day_to_ymd(days[i], &y, &mo, &dd);
      apta_buf_printf(&m, "%s,%04d-%02d-%02d,%.2f,%.2f,%.2f,%.2f,%.0f\n", sym[s], y, mo, dd, open, hi, lo, close, vol);
      px = round(close * 100) / 100;
    }
    last[s] = px;
  }
  apta_gen_write(a, 1, "market_feed", m.data, m.len);

  /* accounts and their positions */
  apta_buf p = {0};
  enum { MAXPOS = 8 };
  long *possym = apta_xmalloc(sizeof(long) * (size_t)naccounts * MAXPOS), *posqty = apta_xmalloc(sizeof(long) * (size_t)naccounts * MAXPOS);
  int *npos = apta_xmalloc(sizeof(int) * (size_t)naccounts);
  for (long ac = 0; ac < naccounts; ac++) {
    apta_buf_printf(&p, "A,%ld,%.2f,%.2f\n", 50000 + ac, 1000 + 200000 * apta_rng_unit(&r), 150000 * apta_rng_unit(&r));
    npos[ac] = 1 + (int)apta_rng_below(&r, MAXPOS);
    for (int k = 0; k < npos[ac]; k++) {
      long s = (ac * 7 + k * 13) % nsym; /* distinct symbols per account */
      long q = (long)(10 + apta_rng_below(&r, 2000)) * (apta_rng_below(&r, 6) == 0 ? -1 : 1);
      possym[ac * MAXPOS + k] = s;
      posqty[ac * MAXPOS + k] = q;
      apta_buf_printf(&p, "P,%ld,%s,%ld,%.2f\n", 50000 + ac, sym[s], q, last[s]);
    }
  }
  long bad_date = 0, bad_px = 0, bad_side = 0;
  for (long t = 0; t < ntrades; t++) {
    long ac = (long)apta_rng_below(&r, (uint32_t)naccounts);
    int k = (int)apta_rng_below(&r, (uint32_t)npos[ac]);
    long s = possym[ac * MAXPOS + k], held = posqty[ac * MAXPOS + k];
    const char *side = "B";
    long q = 1 + apta_rng_below(&r, 500);
    if (held > 0 && apta_rng_below(&r, 2)) { side = "S"; q = 1 + (long)apta_rng_below(&r, (uint32_t)held); }
    else if (held < 0 && apta_rng_below(&r, 3) == 0) side = "SS";
    int is_bad_side = 0;
    if (t % 89 == 13) { side = "X"; is_bad_side = 1; }
    else if (t % 97 == 17 && held > 0) { side = "S"; q = held + 100; is_bad_side = 1; }
    bad_side += is_bad_side;
    double price = last[s] * (1 + 0.01 * (apta_rng_unit(&r) - 0.5));
    double lastpx = price * (1 + 0.004 * (apta_rng_unit(&r) - 0.5));
    if (t % 37 == 5) { lastpx = price * 1.08; bad_px++; }
    uint32_t td = days[apta_rng_below(&r, (uint32_t)ndays)], sd = add_business_days(td, 2);
    int is_bad_date = 0;
    if (t % 53 == 7) { td = td + (5 - (uint32_t)weekday(td)); sd = add_business_days(td, 2); is_bad_date = 1; } /* a Saturday */
    else if (t % 71 == 11) { sd = add_business_days(td, 3); is_bad_date = 1; }
    bad_date += is_bad_date;
    int y1, m1, d1, y2, m2, d2;
    day_to_ymd(td, &y1, &m1, &d1);
    day_to_ymd(sd, &y2, &m2, &d2);
    apta_buf_printf(&p, "T,%ld,%ld,%s,%s,%ld,%.4f,%.4f,%04d-%02d-%02d,%04d-%02d-%02d\n", 900000 + t, 50000 + ac, sym[s], side, q, price,
                    lastpx, y1, m1, d1, y2, m2, d2);
  }
  apta_gen_write(a, 1, "portfolio_feed", p.data, p.len);
  apta_buf tr = {0};
  apta_buf_printf(&tr, "volume %ld\ntrdate %ld\nlastpx %ld\nside %ld\n", spikes, bad_date, bad_px, bad_side);
  apta_gen_write(a, 1, "_truth", tr.data, tr.len);
  return 0;
}
