/* apttrace: a Valgrind tool that writes a SynchroTrace v2 trace of one FaaS function instance.
 *
 * The contract is workloads/TRACES.md; this file implements its "Events" and the data of meta.json.
 * Built out of tree against Debian's Valgrind (workloads/tracer/Makefile), run by workloads/trace.py:
 *
 *   VALGRIND_LIB=build/tracer valgrind --tool=apttrace --out-dir=DIR <function binary> <args>
 *
 * writes DIR/sigil.events.out-1 (uncompressed: a tool links no libc and so no zlib; trace.py gzips
 * it into sigil.events.out-1.gz), DIR/sigil.pthread.out (empty: one thread) and DIR/apttrace.json
 * (phases, objects, statistics; trace.py turns it into meta.json).
 *
 * How it counts. Every guest instruction is classified once, when its superblock is translated:
 *   - reads / writes: one per load / store IR access (Load, Store, LoadG, StoreG, CAS, LLSC, dirty
 *     helpers with memory effects), with its address and size, passed to a helper at run time;
 *   - flops: an instruction with any floating-point IR operation (a table generated from
 *     libvex_ir.h by gen_flops.py), whether or not it also touches memory;
 *   - iops: an instruction with neither a floating-point operation nor a memory access.
 * So instructions = iops + flops + (integer instructions with a memory access). A rep-prefixed
 * string instruction (rep movsb / stosb ..., what glibc's memcpy and memset use for large sizes) is
 * executed by Valgrind one element per iteration; hardware moves whole lines ("fast strings"), so
 * it counts one access per new 64-byte line of each stream and one instruction per new source
 * line, not one per byte (otherwise a 1 MB memcpy would be 2 M accesses). The per-instruction
 * op counts are added to three global counters by inline IR, flushed before each memory helper,
 * before each side exit and at the end of the superblock, so every event gets exactly the
 * instructions that executed before its last access.
 *
 * Aggregation. A compute event collects consecutive instructions and is closed after 1,000 memory
 * accesses, at a phase marker, or early when a read or write range list would need a 65th range.
 * Ranges are in 64-byte lines, merged when they touch or overlap.
 *
 * Phases (client requests of include/apta_store.h). APTA_VG_PHASE writes "& GET" ... "& END";
 * nothing is traced before the first marker (process start-up) or after END (exit). APTA_VG_IO
 * brackets the host store's own file I/O, which is left out: the kernel's read(2)/write(2) of an
 * object is invisible to Valgrind anyway, and the host store's stdio work is not the function's.
 * In its place APTA_VG_OBJECT synthesizes the store traffic: a get object's lines are read in the
 * GET phase, a put object's lines written in the PUT phase, one access per 64-byte line.
 *
 * Deterministic: no time, no pid in the output; trace.py runs the client with ASLR off.
 */
#include "pub_tool_basics.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_vki.h"
#include "valgrind.h"

#include "apta_store.h" /* the client request codes and phase ids: one definition */

#include "flops.h" /* generated: static const IROp apt_float_ops[] */

#define LINE_SHIFT 6          /* 64-byte lines */
#define MAX_ACCESSES 1000     /* per compute event */
#define MAX_RANGES 64         /* per list per event */
#define PEND_BITS 20          /* packing of pending op counts into one helper argument */
#define PEND_MASK ((1UL << PEND_BITS) - 1)
#define SIZE_MASK 0xffffUL    /* the helper's size argument also carries two flags: */
#define REP_STRING (1UL << 16) /* the access is one iteration of a rep-prefixed string instruction */
#define REP_INSTR (1UL << 17)  /* ... and the instruction's first access (counts the instruction) */

/* ---- options ------------------------------------------------------------------------------- */
static const HChar *clo_out_dir = NULL;

static Bool apt_process_cmd_line_option(const HChar *arg) {
  if VG_STR_CLO (arg, "--out-dir", clo_out_dir) {
  } else
    return False;
  return True;
}
static void apt_print_usage(void) { VG_(printf)("    --out-dir=DIR    write the trace files into DIR (required)\n"); }
static void apt_print_debug_usage(void) {}

/* ---- output buffer ------------------------------------------------------------------------- */
#define OBUF_SIZE (1 << 20)
#define OBUF_ROOM 16384 /* > the longest event line: 4 counts + 128 ranges of 2 x 18 chars */
static HChar obuf[OBUF_SIZE];
static Int opos;
static Int ev_fd = -1;
static ULong out_bytes;

static void fail(const HChar *what, const HChar *path) {
  VG_(message)(Vg_UserMsg, "apttrace: %s %s\n", what, path);
  VG_(exit)(2);
}

static void obuf_flush(void) {
  Int done = 0;
  while (done < opos) {
    Int n = VG_(write)(ev_fd, obuf + done, opos - done);
    if (n <= 0) fail("cannot write the event file in", clo_out_dir);
    done += n;
  }
  out_bytes += (ULong)opos;
  opos = 0;
}
static inline void put_ch(HChar c) { obuf[opos++] = c; }
static void put_str(const HChar *s) {
  while (*s) obuf[opos++] = *s++;
}
static void put_dec(ULong v) {
  HChar tmp[24];
  Int n = 0;
  do {
    tmp[n++] = (HChar)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n) obuf[opos++] = tmp[--n];
}
static void put_hex(ULong v) {
  static const HChar digits[] = "0123456789abcdef";
  HChar tmp[20];
  Int n = 0;
  do {
    tmp[n++] = digits[v & 15];
    v >>= 4;
  } while (v);
  obuf[opos++] = '0';
  obuf[opos++] = 'x';
  while (n) obuf[opos++] = tmp[--n];
}

/* ---- state --------------------------------------------------------------------------------- */
typedef struct {
  Addr lo, hi; /* line numbers, inclusive */
} Range;
typedef struct {
  Range r[MAX_RANGES];
  Int n, last; /* last: the range hit most recently (sequential streams hit it again) */
} RangeList;

typedef struct {
  ULong instructions, iops, flops, reads, writes, events;
} Counts;

/* Incremented by inline IR for every executed instruction, traced or not. */
static ULong g_instrs, g_iops, g_flops;
/* Their values where the current event began (moved forward past excluded I/O). */
static ULong b_instrs, b_iops, b_flops;
static ULong io_instrs, io_iops, io_flops; /* their values where the I/O window began */

static RangeList ev_r, ev_w;
static ULong ev_nr, ev_nw;

enum { ST_BEFORE, ST_ON, ST_DONE };
static Int state = ST_BEFORE;
static Int io_depth;
static Bool active; /* state == ST_ON && io_depth == 0: the helpers record accesses */

static Int cur_phase; /* APTA_PHASE_* of the current phase, 0 before the first marker */
static Counts total, by_phase[5];
static const HChar *phase_names[5] = {"?", "GET", "COMPUTE", "PUT", "END"};

#define MAX_PHASES 16
static struct {
  Int phase;
  ULong first_event;
} phases[MAX_PHASES];
static Int nphases;

typedef struct {
  Int kind;
  HChar name[128];
  Addr addr;
  ULong len;
} Object;
static Object *objects;
static Int nobjects, cap_objects;
static ULong get_bytes, put_bytes;
static HChar function_name[128];
static Bool bad_order; /* a marker out of GET -> COMPUTE -> PUT -> END order: reported in the json */

static void update_active(void) { active = state == ST_ON && io_depth == 0; }

/* ---- events -------------------------------------------------------------------------------- */
static void sort_ranges(RangeList *L) {
  for (Int i = 1; i < L->n; i++) { /* insertion sort: at most 64 ranges */
    Range x = L->r[i];
    Int j = i - 1;
    while (j >= 0 && L->r[j].lo > x.lo) {
      L->r[j + 1] = L->r[j];
      j--;
    }
    L->r[j + 1] = x;
  }
}

static void put_ranges(HChar tag, RangeList *L) {
  if (L->n == 0) return;
  sort_ranges(L);
  put_ch(' ');
  put_ch(tag);
  for (Int i = 0; i < L->n; i++) {
    put_ch(' ');
    put_hex(L->r[i].lo << LINE_SHIFT);
    put_ch(' ');
    put_hex((L->r[i].hi << LINE_SHIFT) + ((1UL << LINE_SHIFT) - 1));
  }
}

/* Close the current event: write it if it holds any counted work, start the next one here. */
static void close_event(void) {
  ULong ni = g_instrs - b_instrs, io = g_iops - b_iops, fo = g_flops - b_flops;
  if (io == 0 && fo == 0 && ev_nr == 0 && ev_nw == 0) return; /* nothing to write; carry on */
  put_ch('@');
  put_ch(' ');
  put_dec(io);
  put_ch(',');
  put_dec(fo);
  put_ch(',');
  put_dec(ev_nr);
  put_ch(',');
  put_dec(ev_nw);
  put_ranges('$', &ev_w);
  put_ranges('*', &ev_r);
  put_ch('\n');
  if (opos > OBUF_SIZE - OBUF_ROOM) obuf_flush();
  Counts *p = &by_phase[cur_phase];
  total.instructions += ni, p->instructions += ni;
  total.iops += io, p->iops += io;
  total.flops += fo, p->flops += fo;
  total.reads += ev_nr, p->reads += ev_nr;
  total.writes += ev_nw, p->writes += ev_nw;
  total.events++, p->events++;
  b_instrs = g_instrs, b_iops = g_iops, b_flops = g_flops;
  ev_r.n = ev_w.n = 0;
  ev_r.last = ev_w.last = 0;
  ev_nr = ev_nw = 0;
}

static inline Bool touches(const Range *r, Addr lo, Addr hi) { return lo <= r->hi + 1 && hi + 1 >= r->lo; }

/* r[k] grew: absorb every other range it now touches (keeps "each range listed once"). */
static void absorb(RangeList *L, Int k) {
  Bool again = True;
  while (again) {
    again = False;
    for (Int j = 0; j < L->n; j++) {
      if (j == k || !touches(&L->r[k], L->r[j].lo, L->r[j].hi)) continue;
      if (L->r[j].lo < L->r[k].lo) L->r[k].lo = L->r[j].lo;
      if (L->r[j].hi > L->r[k].hi) L->r[k].hi = L->r[j].hi;
      L->r[j] = L->r[--L->n]; /* remove j: the last range moves into its slot */
      if (k == L->n) k = j;
      again = True;
      break;
    }
  }
  L->last = k;
}

/* Add lines [lo, hi]; False if that needs a 65th range (the caller closes the event first). */
static Bool rl_add(RangeList *L, Addr lo, Addr hi) {
  if (L->n) {
    Range *r = &L->r[L->last];
    if (lo >= r->lo && hi <= r->hi) return True;
  }
  for (Int j = 0; j < L->n; j++) {
    Range *r = &L->r[j];
    if (!touches(r, lo, hi)) continue;
    if (lo >= r->lo && hi <= r->hi) {
      L->last = j;
      return True;
    }
    if (lo < r->lo) r->lo = lo;
    if (hi > r->hi) r->hi = hi;
    absorb(L, j);
    return True;
  }
  if (L->n == MAX_RANGES) return False;
  L->r[L->n].lo = lo;
  L->r[L->n].hi = hi;
  L->last = L->n++;
  return True;
}

/* `count` accesses covering lines [lo, hi] (count <= MAX_ACCESSES - accesses so far). */
static void record(Bool write, Addr lo, Addr hi, ULong count) {
  RangeList *L = write ? &ev_w : &ev_r;
  if (!rl_add(L, lo, hi)) {
    close_event();
    rl_add(L, lo, hi);
  }
  if (write) ev_nw += count;
  else ev_nr += count;
  if (ev_nr + ev_nw >= MAX_ACCESSES) close_event();
}

/* The line of the previous rep-string iteration's read and write (see REP_STRING). */
static Addr rep_last_r = ~0UL, rep_last_w = ~0UL;

/* A rep string iteration on the same line as the previous one of its stream: not a new access. */
static inline Bool rep_same_line(Bool write, Addr a, UWord flags) {
  Addr *last = write ? &rep_last_w : &rep_last_r;
  Addr line = a >> LINE_SHIFT;
  if (line == *last) return True;
  *last = line;
  if (flags & REP_INSTR) g_instrs++;
  return False;
}

static inline void add_pending(UWord pend) {
  g_instrs += pend & PEND_MASK;
  g_iops += (pend >> PEND_BITS) & PEND_MASK;
  g_flops += pend >> (2 * PEND_BITS);
}

static VG_REGPARM(3) void h_read(Addr a, UWord size, UWord pend) {
  add_pending(pend);
  if ((size & REP_STRING) && rep_same_line(False, a, size)) return;
  size &= SIZE_MASK;
  if (active) record(False, a >> LINE_SHIFT, (a + size - 1) >> LINE_SHIFT, 1);
}
static VG_REGPARM(3) void h_write(Addr a, UWord size, UWord pend) {
  add_pending(pend);
  if ((size & REP_STRING) && rep_same_line(True, a, size)) return;
  size &= SIZE_MASK;
  if (active) record(True, a >> LINE_SHIFT, (a + size - 1) >> LINE_SHIFT, 1);
}

/* The store traffic of one object: every line of [addr, addr+len), one access per line, in
 * events of at most MAX_ACCESSES accesses (a contiguous object is one range per event). */
static void synthesize(Bool write, Addr addr, ULong len) {
  if (len == 0) return;
  Addr lo = addr >> LINE_SHIFT, hi = (addr + len - 1) >> LINE_SHIFT;
  while (lo <= hi) {
    ULong room = MAX_ACCESSES - (ev_nr + ev_nw);
    ULong n = hi - lo + 1 < room ? hi - lo + 1 : room;
    record(write, lo, lo + n - 1, n);
    lo += n;
  }
}

/* ---- client requests ----------------------------------------------------------------------- */
static void copy_client_string(HChar *dst, Int cap, const HChar *src) {
  Int i = 0;
  if (src)
    for (; i < cap - 1 && src[i]; i++) dst[i] = src[i];
  dst[i] = 0;
}

static void phase_marker(Int ph, const HChar *fn) {
  if (ph < APTA_PHASE_GET || ph > APTA_PHASE_END || state == ST_DONE) {
    bad_order = True;
    return;
  }
  if (state == ST_ON) close_event();
  else { /* the first marker: what ran before it (start-up) is dropped */
    b_instrs = g_instrs, b_iops = g_iops, b_flops = g_flops;
    ev_r.n = ev_w.n = 0;
    ev_nr = ev_nw = 0;
    copy_client_string(function_name, sizeof function_name, fn);
    state = ST_ON;
  }
  if (ph <= cur_phase) bad_order = True;
  cur_phase = ph;
  put_str("& ");
  put_str(phase_names[ph]);
  put_ch('\n');
  if (nphases < MAX_PHASES) {
    phases[nphases].phase = ph;
    phases[nphases].first_event = total.events + 1;
    nphases++;
  } else bad_order = True;
  if (ph == APTA_PHASE_END) state = ST_DONE;
  update_active();
}

static void object_mark(Int kind, const HChar *name, Addr addr, ULong len) {
  if (nobjects == cap_objects) {
    cap_objects = cap_objects ? 2 * cap_objects : 16;
    objects = VG_(realloc)("apttrace.objects", objects, cap_objects * sizeof(Object));
  }
  Object *o = &objects[nobjects++];
  o->kind = kind;
  copy_client_string(o->name, sizeof o->name, name);
  o->addr = addr;
  o->len = len;
  if (kind == APTA_OBJ_GET) get_bytes += len;
  else put_bytes += len;
  if (!active) return;
  if (kind == APTA_OBJ_GET && cur_phase == APTA_PHASE_GET) synthesize(False, addr, len);
  else if (kind == APTA_OBJ_PUT && cur_phase == APTA_PHASE_PUT) synthesize(True, addr, len);
}

static void io_window(Bool on) {
  if (on) {
    if (io_depth++ == 0) io_instrs = g_instrs, io_iops = g_iops, io_flops = g_flops;
  } else if (io_depth > 0 && --io_depth == 0) {
    /* exclude the window's instructions from the current event */
    b_instrs += g_instrs - io_instrs, b_iops += g_iops - io_iops, b_flops += g_flops - io_flops;
  }
  update_active();
}

static Bool apt_handle_client_request(ThreadId tid, UWord *arg, UWord *ret) {
  if (!VG_IS_TOOL_USERREQ('A', 'P', arg[0])) return False;
  switch (arg[0]) {
  case APTA_VG_PHASE: phase_marker((Int)arg[1], (const HChar *)arg[2]); break;
  case APTA_VG_OBJECT: object_mark((Int)arg[1], (const HChar *)arg[2], (Addr)arg[3], (ULong)arg[4]); break;
  case APTA_VG_IO: io_window(arg[1] != 0); break;
  default: return False;
  }
  *ret = 0;
  return True;
}

/* ---- instrumentation ----------------------------------------------------------------------- */
static Bool is_float_op[Iop_LAST - Iop_INVALID + 1];

static Bool expr_is_float(const IRExpr *e) {
  IROp op;
  switch (e->tag) {
  case Iex_Unop: op = e->Iex.Unop.op; break;
  case Iex_Binop: op = e->Iex.Binop.op; break;
  case Iex_Triop: op = e->Iex.Triop.details->op; break;
  case Iex_Qop: op = e->Iex.Qop.details->op; break;
  default: return False;
  }
  return is_float_op[op - Iop_INVALID];
}

/* What the instruction starting at stmts[i] (an IMark) does: memory access, float op. */
static void classify(const IRSB *sb, Int i, Bool *mem, Bool *flt) {
  *mem = *flt = False;
  for (i++; i < sb->stmts_used && sb->stmts[i]->tag != Ist_IMark; i++) {
    const IRStmt *st = sb->stmts[i];
    switch (st->tag) {
    case Ist_WrTmp:
      if (st->Ist.WrTmp.data->tag == Iex_Load) *mem = True;
      else if (expr_is_float(st->Ist.WrTmp.data)) *flt = True;
      break;
    case Ist_Store:
    case Ist_StoreG:
    case Ist_LoadG:
    case Ist_CAS:
    case Ist_LLSC: *mem = True; break;
    case Ist_Dirty:
      if (st->Ist.Dirty.details->mFx != Ifx_None) *mem = True;
      break;
    default: break;
    }
  }
}

/* Is the instruction at pc a rep/repne-prefixed string instruction (movs, cmps, stos, lods, scas)?
 * Decoded from the guest bytes, which are mapped: VEX has just translated them. */
static Bool is_rep_string(Addr pc, UInt len) {
  const UChar *b = (const UChar *)pc;
  Bool rep = False;
  UInt i = 0;
  for (; i < len; i++) {
    UChar c = b[i];
    if (c == 0xF2 || c == 0xF3) rep = True;
    else if (c != 0x66 && c != 0x67 && c != 0x2E && c != 0x3E && c != 0x26 && c != 0x64 && c != 0x65 && c != 0x36) break;
  }
  if (i < len && (b[i] & 0xF0) == 0x40) i++; /* REX */
  if (!rep || i >= len) return False;
  switch (b[i]) {
  case 0xA4: case 0xA5: case 0xA6: case 0xA7: case 0xAA: case 0xAB: case 0xAC: case 0xAD: case 0xAE: case 0xAF: return True;
  default: return False;
  }
}

static void add_counter(IRSB *sb, ULong *counter, ULong n) {
  if (n == 0) return;
  IRTemp t1 = newIRTemp(sb->tyenv, Ity_I64), t2 = newIRTemp(sb->tyenv, Ity_I64);
  IRExpr *where = mkIRExpr_HWord((HWord)counter);
  addStmtToIRSB(sb, IRStmt_WrTmp(t1, IRExpr_Load(Iend_LE, Ity_I64, where)));
  addStmtToIRSB(sb, IRStmt_WrTmp(t2, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(t1), IRExpr_Const(IRConst_U64(n)))));
  addStmtToIRSB(sb, IRStmt_Store(Iend_LE, mkIRExpr_HWord((HWord)counter), IRExpr_RdTmp(t2)));
}

typedef struct {
  ULong instrs, iops, flops;
  UWord rep; /* REP_STRING (| REP_INSTR until its first access) inside a rep string instruction */
} Pending;

static void flush_inline(IRSB *sb, Pending *p) {
  add_counter(sb, &g_instrs, p->instrs);
  add_counter(sb, &g_iops, p->iops);
  add_counter(sb, &g_flops, p->flops);
  p->instrs = p->iops = p->flops = 0;
}

/* A helper call for one access; pending op counts ride along (guarded calls flush them inline
 * first, since a false guard skips the call). */
static void add_access(IRSB *sb, Bool write, IRExpr *addr, Int size, IRExpr *guard, Pending *p) {
  if (guard) flush_inline(sb, p);
  tl_assert(p->instrs <= PEND_MASK && p->iops <= PEND_MASK && p->flops <= PEND_MASK);
  UWord pend = (UWord)(p->instrs | p->iops << PEND_BITS | p->flops << (2 * PEND_BITS));
  p->instrs = p->iops = p->flops = 0;
  if (size <= 0) size = 1;
  tl_assert((UWord)size <= SIZE_MASK);
  UWord size_flags = (UWord)size | p->rep;
  p->rep &= ~REP_INSTR; /* the instruction is counted with its first access only */
  IRDirty *d = unsafeIRDirty_0_N(3, write ? "h_write" : "h_read", VG_(fnptr_to_fnentry)(write ? (void *)h_write : (void *)h_read),
                                 mkIRExprVec_3(addr, mkIRExpr_HWord((HWord)size_flags), mkIRExpr_HWord(pend)));
  if (guard) d->guard = guard;
  addStmtToIRSB(sb, IRStmt_Dirty(d));
}

static IRSB *apt_instrument(VgCallbackClosure *closure, IRSB *sbIn, const VexGuestLayout *layout, const VexGuestExtents *vge,
                            const VexArchInfo *archinfo_host, IRType gWordTy, IRType hWordTy) {
  if (gWordTy != hWordTy) VG_(tool_panic)("host/guest word size mismatch");
  IRSB *sb = deepCopyIRSBExceptStmts(sbIn);
  Pending p = {0, 0, 0, 0};
  Int i = 0;
  for (; i < sbIn->stmts_used && sbIn->stmts[i]->tag != Ist_IMark; i++) addStmtToIRSB(sb, sbIn->stmts[i]); /* preamble */

  for (; i < sbIn->stmts_used; i++) {
    IRStmt *st = sbIn->stmts[i];
    if (!st || st->tag == Ist_NoOp) continue;
    switch (st->tag) {
    case Ist_IMark: {
      Bool mem, flt;
      classify(sbIn, i, &mem, &flt);
      p.rep = 0;
      if (mem && !flt && is_rep_string((Addr)st->Ist.IMark.addr, st->Ist.IMark.len)) {
        p.rep = REP_STRING | REP_INSTR; /* counted by the helper, once per new line */
        break;
      }
      p.instrs++;
      if (flt) p.flops++;
      else if (!mem) p.iops++;
      break;
    }
    case Ist_WrTmp: {
      IRExpr *data = st->Ist.WrTmp.data;
      if (data->tag == Iex_Load)
        add_access(sb, False, data->Iex.Load.addr, sizeofIRType(data->Iex.Load.ty), NULL, &p);
      break;
    }
    case Ist_Store: {
      IRExpr *data = st->Ist.Store.data;
      add_access(sb, True, st->Ist.Store.addr, sizeofIRType(typeOfIRExpr(sbIn->tyenv, data)), NULL, &p);
      break;
    }
    case Ist_StoreG: {
      IRStoreG *sg = st->Ist.StoreG.details;
      add_access(sb, True, sg->addr, sizeofIRType(typeOfIRExpr(sbIn->tyenv, sg->data)), sg->guard, &p);
      break;
    }
    case Ist_LoadG: {
      IRLoadG *lg = st->Ist.LoadG.details;
      IRType tyWide = Ity_INVALID, tyLoaded = Ity_INVALID;
      typeOfIRLoadGOp(lg->cvt, &tyWide, &tyLoaded);
      add_access(sb, False, lg->addr, sizeofIRType(tyLoaded), lg->guard, &p);
      break;
    }
    case Ist_Dirty: {
      IRDirty *d = st->Ist.Dirty.details;
      if (d->mFx != Ifx_None) {
        if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify) add_access(sb, False, d->mAddr, d->mSize, NULL, &p);
        if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify) add_access(sb, True, d->mAddr, d->mSize, NULL, &p);
      }
      break;
    }
    case Ist_CAS: {
      IRCAS *cas = st->Ist.CAS.details;
      Int size = sizeofIRType(typeOfIRExpr(sbIn->tyenv, cas->dataLo)) * (cas->dataHi ? 2 : 1);
      add_access(sb, False, cas->addr, size, NULL, &p);
      add_access(sb, True, cas->addr, size, NULL, &p);
      break;
    }
    case Ist_LLSC: {
      IRType ty = typeOfIRTemp(sbIn->tyenv, st->Ist.LLSC.result);
      if (st->Ist.LLSC.storedata == NULL) add_access(sb, False, st->Ist.LLSC.addr, sizeofIRType(ty), NULL, &p);
      else add_access(sb, True, st->Ist.LLSC.addr, sizeofIRType(typeOfIRExpr(sbIn->tyenv, st->Ist.LLSC.storedata)), NULL, &p);
      break;
    }
    case Ist_Exit: flush_inline(sb, &p); break;
    default: break;
    }
    addStmtToIRSB(sb, st);
  }
  flush_inline(sb, &p);
  return sb;
}

/* ---- start and end ------------------------------------------------------------------------- */
static HChar *path_in_out_dir(const HChar *file) {
  HChar *p = VG_(malloc)("apttrace.path", VG_(strlen)(clo_out_dir) + VG_(strlen)(file) + 2);
  VG_(sprintf)(p, "%s/%s", clo_out_dir, file);
  return p;
}

static Int open_out(const HChar *file) {
  HChar *p = path_in_out_dir(file);
  Int fd = VG_(fd_open)(p, VKI_O_CREAT | VKI_O_WRONLY | VKI_O_TRUNC, 0644);
  if (fd < 0) fail("cannot create", p);
  VG_(free)(p);
  return fd;
}

static void apt_post_clo_init(void) {
  if (!clo_out_dir) {
    VG_(message)(Vg_UserMsg, "apttrace: --out-dir=DIR is required\n");
    VG_(exit)(2);
  }
  ev_fd = open_out("sigil.events.out-1");
  VG_(close)(open_out("sigil.pthread.out")); /* one thread: no thread-API events */
}

/* JSON writer over obuf (the event file is flushed and closed first). */
static void put_counts(const Counts *c) {
  put_str("{\"instructions\": ");
  put_dec(c->instructions);
  put_str(", \"iops\": ");
  put_dec(c->iops);
  put_str(", \"flops\": ");
  put_dec(c->flops);
  put_str(", \"reads\": ");
  put_dec(c->reads);
  put_str(", \"writes\": ");
  put_dec(c->writes);
  put_str(", \"events\": ");
  put_dec(c->events);
  put_ch('}');
}
static void put_json_string(const HChar *s) { /* names are [A-Za-z0-9_.-]; escape anything else */
  put_ch('"');
  for (; *s; s++) {
    UChar c = (UChar)*s;
    if (c == '"' || c == '\\') put_ch('\\'), put_ch((HChar)c);
    else if (c < 0x20 || c >= 0x7f) put_str("\\u00"), put_ch("0123456789abcdef"[c >> 4]), put_ch("0123456789abcdef"[c & 15]);
    else put_ch((HChar)c);
    if (opos > OBUF_SIZE - OBUF_ROOM) obuf_flush();
  }
  put_ch('"');
}

static void apt_fini(Int exitcode) {
  Bool complete = state == ST_DONE;
  if (state == ST_ON) close_event(); /* the function died mid-way: keep what ran (complete: false) */
  obuf_flush();
  VG_(close)(ev_fd);
  ULong event_bytes = out_bytes;

  ev_fd = open_out("apttrace.json.tmp");
  put_str("{\"function\": ");
  put_json_string(function_name);
  put_str(", \"complete\": ");
  put_str(complete && !bad_order ? "true" : "false");
  put_str(", \"exit_code\": ");
  put_dec((ULong)(UInt)exitcode);
  put_str(", \"event_file_bytes\": ");
  put_dec(event_bytes);
  put_str(",\n \"phases\": [");
  for (Int i = 0; i < nphases; i++) {
    Int ph = phases[i].phase;
    put_str(i ? ", " : "");
    put_str("{\"phase\": \"");
    put_str(phase_names[ph]);
    put_str("\", \"first_event\": ");
    put_dec(phases[i].first_event);
    put_str(", \"events\": ");
    put_dec(by_phase[ph].events);
    put_ch('}');
  }
  put_str("],\n \"objects\": [");
  for (Int i = 0; i < nobjects; i++) {
    put_str(i ? ",\n  " : "");
    put_str("{\"kind\": \"");
    put_str(objects[i].kind == APTA_OBJ_GET ? "get" : "put");
    put_str("\", \"name\": ");
    put_json_string(objects[i].name);
    put_str(", \"addr\": \"");
    put_hex(objects[i].addr);
    put_str("\", \"len\": ");
    put_dec(objects[i].len);
    put_ch('}');
    if (opos > OBUF_SIZE - OBUF_ROOM) obuf_flush();
  }
  put_str("],\n \"stats\": ");
  put_counts(&total);
  opos--; /* reopen the object to add the byte counts and the per-phase counts */
  put_str(", \"get_bytes\": ");
  put_dec(get_bytes);
  put_str(", \"put_bytes\": ");
  put_dec(put_bytes);
  put_str(", \"by_phase\": {");
  Bool first = True;
  for (Int ph = APTA_PHASE_GET; ph < APTA_PHASE_END; ph++) {
    Bool seen = False;
    for (Int i = 0; i < nphases; i++) seen |= phases[i].phase == ph;
    if (!seen) continue;
    put_str(first ? "\"" : ", \"");
    first = False;
    put_str(phase_names[ph]);
    put_str("\": ");
    put_counts(&by_phase[ph]);
  }
  put_str("}}}\n");
  obuf_flush();
  VG_(close)(ev_fd);
  /* written last, by rename: trace.py treats a directory without it as a failed run */
  HChar *tmp = path_in_out_dir("apttrace.json.tmp"), *fin = path_in_out_dir("apttrace.json");
  if (VG_(rename)(tmp, fin) != 0) fail("cannot rename", tmp);
}

static void apt_pre_clo_init(void) {
  VG_(details_name)("apttrace");
  VG_(details_version)("1");
  VG_(details_description)("SynchroTrace v2 traces of FaaS functions (apta)");
  VG_(details_copyright_author)("apta project");
  VG_(details_bug_reports_to)("workloads/tracer/");
  VG_(details_avg_translation_sizeB)(275);
  VG_(basic_tool_funcs)(apt_post_clo_init, apt_instrument, apt_fini);
  VG_(needs_command_line_options)(apt_process_cmd_line_option, apt_print_usage, apt_print_debug_usage);
  VG_(needs_client_requests)(apt_handle_client_request);
  for (UInt i = 0; i < sizeof apt_float_ops / sizeof apt_float_ops[0]; i++) is_float_op[apt_float_ops[i] - Iop_INVALID] = True;
}

VG_DETERMINE_INTERFACE_VERSION(apt_pre_clo_init)
