/* side (audit rule): order side. Flags trades whose side is not B, S or SS, and long sales (S)
 * of more shares than the account holds long in that symbol (a short sale marked as a long sale).
 * get portfolios -> emit audit_side. */
#include "apta_store.h"
#include "finra.h"

int apta_function(void) {
  apta_bytes in = apta_get("portfolios");
  portfolios f = portfolios_read(in.data, in.len);
  apta_buf out = {0};
  apta_buf_str(&out, "trade,account,side,reason\n");
  for (uint32_t i = 0; i < f.ntrades; i++) {
    const trade *t = &f.tr[i];
    int buy = t->side[0] == 'B' && t->side[1] == ' ', sell = t->side[0] == 'S' && t->side[1] == ' ';
    int shrt = t->side[0] == 'S' && t->side[1] == 'S';
    const char *why = NULL;
    if (!buy && !sell && !shrt) why = "invalid side";
    else if (sell) {
      int64_t held = 0;
      for (uint32_t k = 0; k < f.npositions; k++)
        if (f.pos[k].account == t->account && f.pos[k].sym == t->sym) held += f.pos[k].qty;
      if (t->qty > held) why = "long sale exceeds position";
    }
    if (why) apta_buf_printf(&out, "%u,%u,%.2s,%s\n", t->id, f.acc[t->account].id, t->side, why);
  }
  apta_emit("audit_side", out.data, out.len);
  return 0;
}
