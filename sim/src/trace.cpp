#include "trace.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <sys/stat.h>

#include "json.hpp"

namespace apta {

static std::string read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(path + ": missing trace file");
  gzbuffer(f, 1 << 20);
  std::string out;
  std::vector<char> buf(1 << 20);
  for (;;) {
    int n = gzread(f, buf.data(), unsigned(buf.size()));
    if (n < 0) { int e; std::string m = gzerror(f, &e); gzclose(f); throw std::runtime_error(path + ": corrupt gzip: " + m); }
    if (n == 0) break;
    out.append(buf.data(), size_t(n));
  }
  gzclose(f);
  return out;
}

namespace {
struct LineParser {
  const std::string& file;
  size_t line;
  const char* p;
  const char* end;
  [[noreturn]] void fail(const std::string& field, const std::string& m) const {
    throw std::runtime_error(file + ":" + std::to_string(line) + ": " + field + ": " + m);
  }
  void ws() { while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) ++p; }
  uint64_t num(const std::string& field) {
    const char* s = p;
    uint64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9') { v = v * 10 + uint64_t(*p - '0'); ++p; }
    if (p == s) fail(field, "expected an unsigned integer");
    return v;
  }
  uint64_t hex(const std::string& field) {
    if (end - p < 3 || p[0] != '0' || (p[1] != 'x' && p[1] != 'X')) fail(field, "expected a hex address 0x...");
    p += 2;
    const char* s = p;
    uint64_t v = 0;
    for (; p < end; ++p) {
      char c = *p;
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) break;
      v = v << 4 | unsigned(d);
    }
    if (p == s || p - s > 16) fail(field, "expected a hex address 0x...");
    return v;
  }
};
}  // namespace

static Phase phase_of(const std::string& s) {
  if (s == "GET") return PH_GET;
  if (s == "COMPUTE") return PH_COMPUTE;
  if (s == "PUT") return PH_PUT;
  if (s == "END") return PH_END;
  return PH_NONE;
}

TraceInstance load_trace(const std::string& dir, unsigned line_bytes) {
  TraceInstance t;
  t.dir = dir;
  std::string meta_path = dir + "/meta.json";
  struct stat st;
  if (stat(meta_path.c_str(), &st) != 0)
    throw std::runtime_error(dir + ": missing trace (no meta.json; run `make traces`)");
  json::Value meta;
  try {
    meta = json::parse_file(meta_path);
    const auto& objs = meta.at("objects").arr("objects");
    for (size_t i = 0; i < objs.size(); ++i) {
      std::string w = "objects[" + std::to_string(i) + "]";
      TraceObject o;
      o.kind = objs[i].at("kind", w).str(w + ".kind");
      o.name = objs[i].at("name", w).str(w + ".name");
      const std::string& a = objs[i].at("addr", w).str(w + ".addr");
      char* e = nullptr;
      o.addr = strtoull(a.c_str(), &e, 16);
      if (a.size() < 3 || a.compare(0, 2, "0x") || *e) throw json::Error(w + ".addr: expected a hex address, got " + a);
      o.len = uint64_t(objs[i].at("len", w).integer(w + ".len"));
      if (o.kind != "get" && o.kind != "put") throw json::Error(w + ".kind: expected get or put, got " + o.kind);
      t.objects.push_back(o);
    }
    if (t.objects.size() > 200) throw json::Error("objects: more than 200 objects");
  } catch (const json::Error& e) {
    std::string m = e.what();
    throw std::runtime_error(m.rfind(meta_path, 0) == 0 ? m : meta_path + ": " + m);
  }

  std::string path = dir + "/sigil.events.out-1.gz";
  std::string text = read_gz(path);
  const char* p = text.data();
  const char* end = p + text.size();
  size_t lineno = 0;
  Phase cur = PH_NONE;
  bool started = false;
  int64_t marker_at[4] = {-1, -1, -1, -1};
  const uint64_t lb = line_bytes;
  while (p < end) {
    const char* nl = static_cast<const char*>(memchr(p, '\n', size_t(end - p)));
    const char* le = nl ? nl : end;
    ++lineno;
    LineParser L{path, lineno, p, le};
    L.ws();
    if (L.p == le) { p = le + 1; continue; }
    char kind = *L.p++;
    if (kind == '&') {
      L.ws();
      std::string name(L.p, size_t(le - L.p));
      while (!name.empty() && (name.back() == ' ' || name.back() == '\r')) name.pop_back();
      Phase ph = phase_of(name);
      if (ph == PH_NONE) L.fail("phase", "unknown phase marker '" + name + "' (GET, COMPUTE, PUT, END)");
      if (started && ph <= cur) L.fail("phase", "phase marker '" + name + "' out of order");
      marker_at[ph] = int64_t(t.events.size());
      if (ph < PH_END) t.has_phase[ph] = true;
      cur = ph;
      started = true;
    } else if (kind == '!') {
      L.ws();
      L.num("instruction marker");
    } else if (kind == '@') {
      L.ws();
      uint64_t c[4];
      for (int i = 0; i < 4; ++i) {
        static const char* names[] = {"iops", "flops", "reads", "writes"};
        c[i] = L.num(names[i]);
        if (i < 3) { if (L.p >= le || *L.p != ',') L.fail("counts", "expected iops,flops,reads,writes"); ++L.p; }
      }
      Event ev{c[0] + c[1], uint32_t(t.ranges.size()), 0};
      int mode = -1;  // 1 write ($), 0 read (*)
      for (;;) {
        L.ws();
        if (L.p >= le) break;
        if (*L.p == '$') { mode = 1; ++L.p; continue; }
        if (*L.p == '*') { mode = 0; ++L.p; continue; }
        if (mode < 0) L.fail("ranges", "address range before '$' or '*'");
        uint64_t s = L.hex("range start");
        L.ws();
        uint64_t e = L.hex("range end");
        if (e < s) L.fail("range end", "end before start");
        // split at object boundaries: object lines are keyed by object, the rest is local memory
        uint64_t a = s;
        while (a <= e) {
          uint8_t slot = 0xFF;
          uint64_t seg_end = e;
          for (size_t k = 0; k < t.objects.size(); ++k) {
            const auto& o = t.objects[k];
            if (!o.len) continue;
            uint64_t oe = o.addr + o.len - 1;
            if (a >= o.addr && a <= oe) { slot = uint8_t(k); seg_end = std::min(e, oe); break; }
            if (o.addr > a && o.addr <= seg_end) seg_end = o.addr - 1;
          }
          Range r;
          if (slot == 0xFF) {
            r.first_line = a / lb;
            r.lines = uint32_t(seg_end / lb - a / lb + 1);
          } else {
            uint64_t base = t.objects[slot].addr;
            r.first_line = (a - base) / lb;
            r.lines = uint32_t((seg_end - base) / lb - (a - base) / lb + 1);
          }
          r.slot = slot;
          r.write = uint8_t(mode);
          t.ranges.push_back(r);
          ++ev.nranges;
          if (seg_end == UINT64_MAX) break;
          a = seg_end + 1;
        }
      }
      if (started && cur != PH_END) {  // events before the first marker (start-up) are dropped
        t.events.push_back(ev);
        t.instructions += c[0] + c[1] + c[2] + c[3];
        t.reads += c[2];
        t.writes += c[3];
      } else {
        t.ranges.resize(ev.first_range);
      }
    } else if (kind == '#' || kind == '^') {
      L.fail("event", std::string("unexpected '") + kind + "' event (one thread per trace: no communication or thread-API events)");
    } else {
      L.fail("event", std::string("unknown event kind '") + kind + "' (expected @, &, !)");
    }
    p = le + 1;
  }
  if (!started) throw std::runtime_error(path + ":" + std::to_string(lineno) + ": phase: no phase marker in the trace");
  if (cur != PH_END) throw std::runtime_error(path + ":" + std::to_string(lineno) + ": phase: trace ends without '& END'");
  // phase p = events [phase_begin[p], phase_begin[p+1]); an absent phase is empty
  t.phase_begin[PH_END] = t.phase_begin[PH_NONE] = uint32_t(marker_at[PH_END]);
  for (int q = PH_PUT; q >= PH_GET; --q)
    t.phase_begin[q] = marker_at[q] >= 0 ? uint32_t(marker_at[q]) : t.phase_begin[q + 1];
  return t;
}

}  // namespace apta
