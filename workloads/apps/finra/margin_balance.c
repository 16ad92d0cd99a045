/* marginBalance: Regulation T / FINRA 4210 style maintenance margin per account: long and short
 * market value at the mark, equity = cash - loan + long - short, requirement = 25% of long +
 * 30% of short (params long_pct, short_pct), margin call when equity < requirement. Writes the
 * balances into the accounts of `portfolios` and emits the margin calls.
 * get portfolios -> put portfolios, emit margin_calls (CSV account,equity,requirement,deficit). */
#include "apta_store.h"
#include "finra.h"

int apta_function(void) {
  apta_bytes in = apta_get("portfolios");
  portfolios f = portfolios_read(in.data, in.len);
  double lp = (double)apta_param_long("long_pct", 25) / 100, sp = (double)apta_param_long("short_pct", 30) / 100;
  double *lmv = apta_xmalloc(sizeof(double) * (f.naccounts + 1)), *smv = apta_xmalloc(sizeof(double) * (f.naccounts + 1));
  for (uint32_t k = 0; k < f.npositions; k++) {
    const position *q = &f.pos[k];
    if (q->qty >= 0) lmv[q->account] += (double)q->qty * q->mark;
    else smv[q->account] += (double)-q->qty * q->mark;
  }
  apta_buf calls = {0};
  apta_buf_str(&calls, "account,equity,requirement,deficit\n");
  for (uint32_t i = 0; i < f.naccounts; i++) {
    account *a = &f.acc[i];
    a->equity = a->cash - a->loan + lmv[i] - smv[i];
    a->requirement = lp * lmv[i] + sp * smv[i];
    a->call = a->equity < a->requirement;
    if (a->call) apta_buf_printf(&calls, "%u,%.2f,%.2f,%.2f\n", a->id, a->equity, a->requirement, a->requirement - a->equity);
  }
  f.margined = 1;
  apta_buf out = {0};
  portfolios_write(&out, &f);
  apta_put("portfolios", out.data, out.len);
  apta_emit("margin_calls", calls.data, calls.len);
  return 0;
}
