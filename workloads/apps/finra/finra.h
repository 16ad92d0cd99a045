/* finra.h: objects of the FINRA workflow.
 * market     (fetchMarket):     "MKT1" u32 nsym, u32 ndays, nsym x char[8] symbol, ndays x u32 day,
 *                               nsym x ndays x {f64 open, high, low, close; u64 volume}
 * portfolios (fetchPortfolios, rewritten by marginBalance):
 *   "PRT1" u32 nsym, u32 naccounts, u32 npositions, u32 ntrades, u32 margined(0/1),
 *   nsym x char[8], accounts {u32 id; f64 cash, loan, equity, requirement; u8 call},
 *   positions {u32 account index, u32 sym; i64 qty; f64 mark}, trades {u32 id, account index, sym;
 *   char side[2]; i64 qty; f64 price, lastpx; u32 trade_day, settle_day}
 * Days are days since 1970-01-01 (a Thursday). */
#ifndef FINRA_H
#define FINRA_H
#include <stdio.h>

#include "apta_util.h"

static inline int weekday(uint32_t day) { return (int)((day + 3) % 7); } /* 0 = Monday */
static inline int is_weekend(uint32_t day) { return weekday(day) >= 5; }
static inline uint32_t add_business_days(uint32_t day, int n) {
  while (n > 0) { day++; if (!is_weekend(day)) n--; }
  return day;
}
/* civil date from days (H. Hinnant's algorithm) */
static inline void day_to_ymd(uint32_t z0, int *y, int *m, int *d) {
  long z = (long)z0 + 719468, era = z / 146097, doe = z - era * 146097;
  long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  long mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = (int)(yoe + era * 400 + (*m <= 2));
}
static inline uint32_t ymd_to_day(int y, int m, int d) {
  y -= m <= 2;
  long era = (y >= 0 ? y : y - 399) / 400, yoe = y - era * 400;
  long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1, doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return (uint32_t)(era * 146097 + doe - 719468);
}
static inline uint32_t parse_day(const char *s) { int y, m, d; if (sscanf(s, "%d-%d-%d", &y, &m, &d) != 3) return 0; return ymd_to_day(y, m, d); }

typedef struct { double open, high, low, close; uint64_t volume; } bar;
typedef struct { uint32_t nsym, ndays; const char *sym; const uint32_t *day; bar *bars; } market;

static inline market market_read(const uint8_t *p, size_t len) {
  apta_rd r = apta_rd_init(p, len, "market");
  apta_rd_magic(&r, "MKT1");
  market m;
  m.nsym = apta_rd_u32(&r);
  m.ndays = apta_rd_u32(&r);
  m.sym = (const char *)apta_rd_take(&r, 8ull * m.nsym);
  uint32_t *day = apta_xmalloc(4ull * m.ndays + 4);
  for (uint32_t i = 0; i < m.ndays; i++) day[i] = apta_rd_u32(&r);
  m.day = day;
  m.bars = apta_xmalloc(sizeof(bar) * ((size_t)m.nsym * m.ndays + 1));
  for (size_t i = 0; i < (size_t)m.nsym * m.ndays; i++) {
    m.bars[i].open = apta_rd_f64(&r); m.bars[i].high = apta_rd_f64(&r); m.bars[i].low = apta_rd_f64(&r);
    m.bars[i].close = apta_rd_f64(&r); m.bars[i].volume = apta_rd_u64(&r);
  }
  return m;
}

typedef struct { uint32_t id; double cash, loan, equity, requirement; uint8_t call; } account;
typedef struct { uint32_t account, sym; int64_t qty; double mark; } position;
typedef struct { uint32_t id, account, sym; char side[2]; int64_t qty; double price, lastpx; uint32_t trade_day, settle_day; } trade;
typedef struct {
  uint32_t nsym, naccounts, npositions, ntrades, margined;
  char *sym;
  account *acc;
  position *pos;
  trade *tr;
} portfolios;

static inline portfolios portfolios_read(const uint8_t *p, size_t len) {
  apta_rd r = apta_rd_init(p, len, "portfolios");
  apta_rd_magic(&r, "PRT1");
  portfolios f;
  f.nsym = apta_rd_u32(&r); f.naccounts = apta_rd_u32(&r); f.npositions = apta_rd_u32(&r); f.ntrades = apta_rd_u32(&r);
  f.margined = apta_rd_u32(&r);
  f.sym = apta_xmalloc(8ull * f.nsym + 1);
  memcpy(f.sym, apta_rd_take(&r, 8ull * f.nsym), 8ull * f.nsym);
  f.acc = apta_xmalloc(sizeof(account) * (f.naccounts + 1));
  for (uint32_t i = 0; i < f.naccounts; i++) {
    account *a = &f.acc[i];
    a->id = apta_rd_u32(&r); a->cash = apta_rd_f64(&r); a->loan = apta_rd_f64(&r); a->equity = apta_rd_f64(&r);
    a->requirement = apta_rd_f64(&r); a->call = apta_rd_u8(&r);
  }
  f.pos = apta_xmalloc(sizeof(position) * (f.npositions + 1));
  for (uint32_t i = 0; i < f.npositions; i++) {
    position *q = &f.pos[i];
    q->account = apta_rd_u32(&r); q->sym = apta_rd_u32(&r); q->qty = (int64_t)apta_rd_u64(&r); q->mark = apta_rd_f64(&r);
    if (q->account >= f.naccounts || q->sym >= f.nsym) apta_die("portfolios: position %u out of range", i);
  }
  f.tr = apta_xmalloc(sizeof(trade) * (f.ntrades + 1));
  for (uint32_t i = 0; i < f.ntrades; i++) {
    trade *t = &f.tr[i];
    t->id = apta_rd_u32(&r); t->account = apta_rd_u32(&r); t->sym = apta_rd_u32(&r);
    memcpy(t->side, apta_rd_take(&r, 2), 2);
    t->qty = (int64_t)apta_rd_u64(&r); t->price = apta_rd_f64(&r); t->lastpx = apta_rd_f64(&r);
    t->trade_day = apta_rd_u32(&r); t->settle_day = apta_rd_u32(&r);
    if (t->account >= f.naccounts || t->sym >= f.nsym) apta_die("portfolios: trade %u out of range", i);
  }
  return f;
}

static inline void portfolios_write(apta_buf *b, const portfolios *f) {
  apta_buf_put(b, "PRT1", 4);
  apta_buf_u32(b, f->nsym); apta_buf_u32(b, f->naccounts); apta_buf_u32(b, f->npositions); apta_buf_u32(b, f->ntrades);
  apta_buf_u32(b, f->margined);
  apta_buf_put(b, f->sym, 8ull * f->nsym);
  for (uint32_t i = 0; i < f->naccounts; i++) {
    const account *a = &f->acc[i];
    apta_buf_u32(b, a->id); apta_buf_f64(b, a->cash); apta_buf_f64(b, a->loan); apta_buf_f64(b, a->equity);
    apta_buf_f64(b, a->requirement); apta_buf_u8(b, a->call);
  }
  for (uint32_t i = 0; i < f->npositions; i++) {
    const position *q = &f->pos[i];
    apta_buf_u32(b, q->account); apta_buf_u32(b, q->sym); apta_buf_u64(b, (uint64_t)q->qty); apta_buf_f64(b, q->mark);
  }
  for (uint32_t i = 0; i < f->ntrades; i++) {
    const trade *t = &f->tr[i];
    apta_buf_u32(b, t->id); apta_buf_u32(b, t->account); apta_buf_u32(b, t->sym); apta_buf_put(b, t->side, 2);
    apta_buf_u64(b, (uint64_t)t->qty); apta_buf_f64(b, t->price); apta_buf_f64(b, t->lastpx);
    apta_buf_u32(b, t->trade_day); apta_buf_u32(b, t->settle_day);
  }
}
#endif
