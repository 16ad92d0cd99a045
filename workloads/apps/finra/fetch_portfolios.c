/* fetchPortfolios: download the portfolio feed (external input: accounts, positions with the
 * broker's mark price, trades) and store it as the binary `portfolios` object (unmargined).
 * input portfolio_feed -> put portfolios. */
#include <stdlib.h>

#include "apta_store.h"
#include "finra.h"

static portfolios F;
static uint32_t *acc_ids; /* account id of each index, sorted as read */

static uint32_t sym_index(const char *s) {
  for (uint32_t i = 0; i < F.nsym; i++) if (strncmp(F.sym + 8ull * i, s, 8) == 0) return i;
  F.sym = apta_xrealloc(F.sym, 8ull * (F.nsym + 1));
  memset(F.sym + 8ull * F.nsym, 0, 8);
  memcpy(F.sym + 8ull * F.nsym, s, strnlen(s, 7));
  return F.nsym++;
}

static uint32_t acc_index(uint32_t id) {
  uint32_t lo = 0, hi = F.naccounts; /* accounts arrive in increasing id order */
  while (lo < hi) { uint32_t mid = (lo + hi) / 2; if (acc_ids[mid] < id) lo = mid + 1; else hi = mid; }
  if (lo == F.naccounts || acc_ids[lo] != id) apta_die("fetchPortfolios: unknown account %u", id);
  return lo;
}

int apta_function(void) {
  apta_bytes in = apta_input("portfolio_feed");
  const char *p = (const char *)in.data, *e = p + in.len, *nl;
  uint32_t capa = 0, capp = 0, capt = 0;
  for (long line = 1; p < e; p = nl + 1, line++) {
    nl = memchr(p, '\n', (size_t)(e - p));
    if (!nl) nl = e;
    char lb[256]; /* sscanf on a copy of the line: on the feed itself it would strlen the rest */
    size_t ll = (size_t)(nl - p) < sizeof lb - 1 ? (size_t)(nl - p) : sizeof lb - 1;
    memcpy(lb, p, ll);
    lb[ll] = 0;
    char s[16], side[4], td[16], sd[16];
    unsigned id, ac;
    long q;
    double x, y;
    if (lb[0] == 'A') {
      if (sscanf(lb, "A,%u,%lf,%lf", &id, &x, &y) != 3) apta_die("fetchPortfolios: malformed line %ld", line);
      if (F.naccounts == capa) { capa = capa ? 2 * capa : 64; F.acc = apta_xrealloc(F.acc, sizeof(account) * capa); acc_ids = apta_xrealloc(acc_ids, 4ull * capa); }
      if (F.naccounts && id <= acc_ids[F.naccounts - 1]) apta_die("fetchPortfolios: line %ld: accounts out of order", line);
      acc_ids[F.naccounts] = id;
      F.acc[F.naccounts++] = (account){id, x, y, 0, 0, 0};
    } else if (lb[0] == 'P') {
      if (sscanf(lb, "P,%u,%15[^,],%ld,%lf", &ac, s, &q, &x) != 4) apta_die("fetchPortfolios: malformed line %ld", line);
      if (F.npositions == capp) { capp = capp ? 2 * capp : 256; F.pos = apta_xrealloc(F.pos, sizeof(position) * capp); }
      F.pos[F.npositions++] = (position){acc_index(ac), sym_index(s), q, x};
    } else if (lb[0] == 'T') {
      trade t;
      if (sscanf(lb, "T,%u,%u,%15[^,],%3[^,],%ld,%lf,%lf,%15[^,],%15[^,\n]", &id, &ac, s, side, &q, &t.price, &t.lastpx, td, sd) != 9)
        apta_die("fetchPortfolios: malformed line %ld", line);
      t.id = id; t.account = acc_index(ac); t.sym = sym_index(s);
      t.side[0] = side[0]; t.side[1] = side[1] ? side[1] : ' ';
      t.qty = q; t.trade_day = parse_day(td); t.settle_day = parse_day(sd);
      if (F.ntrades == capt) { capt = capt ? 2 * capt : 1024; F.tr = apta_xrealloc(F.tr, sizeof(trade) * capt); }
      F.tr[F.ntrades++] = t;
    } else apta_die("fetchPortfolios: line %ld: unknown record type", line);
  }
  apta_buf out = {0};
  portfolios_write(&out, &F);
  apta_put("portfolios", out.data, out.len);
  return 0;
}
