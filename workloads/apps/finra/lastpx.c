/* lastpx (audit rule): execution price. Flags trades whose reported last price (FIX LastPx)
 * deviates from the execution price by more than `tolerance_bp` basis points (default 200), or is
 * not positive. get portfolios -> emit audit_lastpx. */
#include <math.h>

#include "apta_store.h"
#include "finra.h"

int apta_function(void) {
  apta_bytes in = apta_get("portfolios");
  portfolios f = portfolios_read(in.data, in.len);
  double tol = (double)apta_param_long("tolerance_bp", 200) / 10000.0;
  apta_buf out = {0};
  apta_buf_str(&out, "trade,account,price,lastpx,deviation\n");
  for (uint32_t i = 0; i < f.ntrades; i++) {
    const trade *t = &f.tr[i];
    double dev = t->price > 0 ? fabs(t->lastpx - t->price) / t->price : INFINITY;
    if (t->lastpx <= 0 || dev > tol) apta_buf_printf(&out, "%u,%u,%.4f,%.4f,%.4f\n", t->id, f.acc[t->account].id, t->price, t->lastpx, dev);
  }
  apta_emit("audit_lastpx", out.data, out.len);
  return 0;
}
