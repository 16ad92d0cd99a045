#include "trace.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "json.hpp"

namespace apta {

// The whole file into `out`; false when it cannot be opened.
static bool read_file(const std::string& path, std::string& out) {
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) return false;
  out.clear();
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && st.st_size > 0) out.reserve(size_t(st.st_size));
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  bool ok = !ferror(f);
  fclose(f);
  if (!ok) throw std::runtime_error(path + ": read error");
  return true;
}

// gunzip in memory (every member, as gzread does); `raw` is the .gz file's bytes
static std::string gunzip(const std::string& raw, const std::string& path) {
  std::string out;
  if (raw.size() >= 18) {  // ISIZE of the last member: the uncompressed size mod 2^32, a hint
    uint32_t isize;
    memcpy(&isize, raw.data() + raw.size() - 4, 4);
    out.reserve(isize);
  }
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) throw std::runtime_error(path + ": zlib init failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z.avail_in = uInt(raw.size());
  std::vector<char> buf(1 << 20);
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buf.data());
    z.avail_out = uInt(buf.size());
    int rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf.data(), buf.size() - z.avail_out);
    if (rc == Z_STREAM_END) {
      // a further member; anything else after a member is ignored, as gzread does
      if (z.avail_in < 2 || z.next_in[0] != 0x1f || z.next_in[1] != 0x8b) break;
      inflateReset(&z);
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) { inflateEnd(&z); throw std::runtime_error(path + ": corrupt gzip: truncated"); }
    std::string m = z.msg ? z.msg : "error " + std::to_string(rc);
    inflateEnd(&z);
    throw std::runtime_error(path + ": corrupt gzip: " + m);
  }
  inflateEnd(&z);
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

// meta.json's objects into t (meta_bytes: the file's bytes, read by the caller)
static void load_meta(TraceInstance& t, const std::string& meta_path, const std::string& meta_bytes) {
  json::Value meta;
  try {
    meta = json::parse(meta_bytes, meta_path);
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

}

// the events file's text (gunzipped) into t's events, ranges, phases and counts
static void parse_events(TraceInstance& t, const std::string& path, const std::string& text, unsigned line_bytes) {
  struct Parsed {
    std::vector<Event> events;
    std::vector<Range> ranges;
  };
  auto own = std::make_shared<Parsed>();
  std::vector<Event>& events = own->events;
  std::vector<Range>& ranges = own->ranges;
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
      marker_at[ph] = int64_t(events.size());
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
      Event ev{c[0] + c[1], uint32_t(ranges.size()), 0};
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
          ranges.push_back(r);
          ++ev.nranges;
          if (seg_end == UINT64_MAX) break;
          a = seg_end + 1;
        }
      }
      if (started && cur != PH_END) {  // events before the first marker (start-up) are dropped
        events.push_back(ev);
        t.instructions += c[0] + c[1] + c[2] + c[3];
        t.reads += c[2];
        t.writes += c[3];
      } else {
        ranges.resize(ev.first_range);
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
  t.events = {events.data(), events.size()};
  t.ranges = {ranges.data(), ranges.size()};
  t.storage = std::move(own);
}

// ---- the binary trace cache ----------------------------------------------------------------------
// One file per trace directory: a header, the events and the ranges as they are in memory, and a
// checksum of all of it. The header's key is a hash of meta.json's and the events file's bytes, so
// a changed trace (or a trace written anew) never meets an old cache; a changed format or memory
// layout changes kCacheVersion or the recorded struct sizes.
namespace {
constexpr uint32_t kCacheVersion = 1;
constexpr char kCacheMagic[8] = {'A', 'P', 'T', 'A', 'T', 'R', 'C', '\n'};

struct CacheHeader {
  char magic[8];
  uint32_t version, line_bytes;
  uint32_t event_size, range_size;  // sizeof(Event), sizeof(Range) of the writer
  uint64_t key;                     // trace_key(meta.json, events file)
  uint64_t n_events, n_ranges;
  uint64_t instructions, reads, writes;
  uint32_t phase_begin[5];
  uint8_t has_phase[4];
};
static_assert(sizeof(CacheHeader) == 96, "cache header layout");

// A 64-bit hash of bytes (four independent multiply-rotate lanes, then a mix): not cryptographic,
// only for telling a changed trace from the one a cache was written for; ~10 GB/s.
uint64_t hash_bytes(const char* p, size_t n, uint64_t seed) {
  constexpr uint64_t P1 = 0x9E3779B185EBCA87ull, P2 = 0xC2B2AE3D27D4EB4Full, P3 = 0x165667B19E3779F9ull;
  auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  auto rd = [](const char* q) { uint64_t v; memcpy(&v, q, 8); return v; };
  uint64_t a[4] = {seed + P1, seed ^ P2, seed - P3, ~seed};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int l = 0; l < 4; ++l) a[l] = rotl(a[l] + rd(p + i + 8 * l) * P2, 31) * P1;
  uint64_t h = rotl(a[0], 1) + rotl(a[1], 7) + rotl(a[2], 12) + rotl(a[3], 18) + uint64_t(n);
  for (; i + 8 <= n; i += 8) h = rotl(h ^ (rotl(rd(p + i) * P2, 31) * P1), 27) * P1 + P3;
  for (; i < n; ++i) h = rotl(h ^ (uint64_t(uint8_t(p[i])) * P3), 11) * P1;
  h ^= h >> 33; h *= P2; h ^= h >> 29; h *= P3; h ^= h >> 32;
  return h;
}

uint64_t trace_key(const std::string& meta_bytes, const std::string& gz_bytes) {
  return hash_bytes(gz_bytes.data(), gz_bytes.size(), hash_bytes(meta_bytes.data(), meta_bytes.size(), kCacheVersion));
}

struct CacheInvalid {
  std::string why;
};

// Reads `path` into t (its events, ranges, phases, counts); throws CacheInvalid saying what is
// wrong. Everything the replay indexes with is checked, so no file can make it read out of bounds.
void read_cache(TraceInstance& t, const std::string& path, uint64_t key, unsigned line_bytes) {
  // mapped, not copied: the replay reads the events and ranges where the page cache has them
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) throw CacheInvalid{"missing"};
  struct stat st;
  if (fstat(fd, &st) != 0) { close(fd); throw CacheInvalid{"unreadable"}; }
  const size_t size = size_t(st.st_size);
  CacheHeader h;
  if (size < sizeof h + 8) { close(fd); throw CacheInvalid{"truncated (" + std::to_string(size) + " bytes, shorter than its header)"}; }
  void* m = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) throw CacheInvalid{std::string("cannot be mapped: ") + strerror(errno)};
  std::shared_ptr<const void> map(m, [size](const void* q) { munmap(const_cast<void*>(q), size); });
  const char* b = static_cast<const char*>(m);
  memcpy(&h, b, sizeof h);
  if (memcmp(h.magic, kCacheMagic, sizeof h.magic)) throw CacheInvalid{"not a trace cache (bad magic)"};
  if (h.version != kCacheVersion)
    throw CacheInvalid{"format version " + std::to_string(h.version) + ", this build reads version " + std::to_string(kCacheVersion)};
  if (h.event_size != sizeof(Event) || h.range_size != sizeof(Range)) throw CacheInvalid{"written by a build with another memory layout"};
  if (h.line_bytes != line_bytes)
    throw CacheInvalid{"written for " + std::to_string(h.line_bytes) + "-byte lines, not " + std::to_string(line_bytes)};
  if (h.key != key) throw CacheInvalid{"stale (meta.json or sigil.events.out-1.gz changed since it was written)"};
  const bool counts_ok = h.n_events <= (1ull << 32) && h.n_ranges <= (1ull << 32);
  const uint64_t want = counts_ok ? sizeof h + h.n_events * sizeof(Event) + h.n_ranges * sizeof(Range) + 8 : 0;
  if (size != want)
    throw CacheInvalid{(size < want ? "truncated (" : "wrong size (") + std::to_string(size) + " bytes, the header says " +
                       std::to_string(want) + ")"};
  uint64_t sum;
  memcpy(&sum, b + size - 8, 8);
  if (sum != hash_bytes(b, size - 8, key)) throw CacheInvalid{"corrupt (checksum mismatch)"};
  const TraceArray<Event> events{reinterpret_cast<const Event*>(b + sizeof h), size_t(h.n_events)};
  const TraceArray<Range> ranges{reinterpret_cast<const Range*>(b + sizeof h + h.n_events * sizeof(Event)), size_t(h.n_ranges)};
  for (const Event& e : events)
    if (uint64_t(e.first_range) + e.nranges > h.n_ranges) throw CacheInvalid{"corrupt (an event's ranges beyond the range table)"};
  for (const Range& r : ranges) {
    bool ok = r.lines > 0 && r.write <= 1;
    if (r.slot != 0xFF) {
      const TraceObject* o = r.slot < t.objects.size() ? &t.objects[r.slot] : nullptr;
      ok = ok && o && r.first_line + r.lines <= (o->len + line_bytes - 1) / line_bytes;
    }
    if (!ok) throw CacheInvalid{"corrupt (a range outside its object or memory)"};
  }
  for (int q = 0; q < 4; ++q)
    if (h.phase_begin[q] > h.phase_begin[q + 1] || h.has_phase[q] > 1) throw CacheInvalid{"corrupt (phases out of order)"};
  if (h.phase_begin[PH_END] != h.n_events || h.phase_begin[PH_NONE] != h.n_events)
    throw CacheInvalid{"corrupt (phases do not end with the events)"};
  t.events = events;
  t.ranges = ranges;
  t.storage = std::move(map);
  memcpy(t.phase_begin, h.phase_begin, sizeof t.phase_begin);
  for (int q = 0; q < 4; ++q) t.has_phase[q] = h.has_phase[q];
  t.instructions = h.instructions;
  t.reads = h.reads;
  t.writes = h.writes;
  t.from_cache = true;
}

void write_cache(const TraceInstance& t, const std::string& path, uint64_t key, unsigned line_bytes) {
  CacheHeader h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, kCacheMagic, sizeof h.magic);
  h.version = kCacheVersion;
  h.line_bytes = line_bytes;
  h.event_size = sizeof(Event);
  h.range_size = sizeof(Range);
  h.key = key;
  h.n_events = t.events.size();
  h.n_ranges = t.ranges.size();
  h.instructions = t.instructions;
  h.reads = t.reads;
  h.writes = t.writes;
  memcpy(h.phase_begin, t.phase_begin, sizeof h.phase_begin);
  for (int q = 0; q < 4; ++q) h.has_phase[q] = t.has_phase[q];
  std::string b(reinterpret_cast<const char*>(&h), sizeof h);
  b.append(reinterpret_cast<const char*>(t.events.p), t.events.size() * sizeof(Event));
  b.append(reinterpret_cast<const char*>(t.ranges.p), t.ranges.size() * sizeof(Range));
  uint64_t sum = hash_bytes(b.data(), b.size(), key);
  b.append(reinterpret_cast<const char*>(&sum), 8);
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = fopen(tmp.c_str(), "wb");
  if (!f) throw std::runtime_error(path + ": cannot write the trace cache");
  bool ok = fwrite(b.data(), 1, b.size(), f) == b.size();
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot write the trace cache");
  }
}
}  // namespace

TraceSource trace_source_from(const std::string& name) {
  if (name == "auto") return TraceSource::Auto;
  if (name == "text") return TraceSource::Text;
  if (name == "cache") return TraceSource::Cache;
  throw std::runtime_error("--trace-source: auto, text or cache, got '" + name + "'");
}

// The trace of `dir` from the text or the cache. With `wrote` (make traces): a valid cache is
// read, else the text is parsed and the cache written, keyed on the very bytes parsed.
static TraceInstance load(const std::string& dir, unsigned line_bytes, TraceSource src, bool* wrote) {
  TraceInstance t;
  t.dir = dir;
  const std::string meta_path = dir + "/meta.json", events_path = dir + "/sigil.events.out-1.gz";
  const std::string cache_path = dir + "/" + kTraceCacheFile;
  std::string meta_bytes, gz;
  if (!read_file(meta_path, meta_bytes)) throw std::runtime_error(dir + ": missing trace (no meta.json; run `make traces`)");
  load_meta(t, meta_path, meta_bytes);
  if (!read_file(events_path, gz)) throw std::runtime_error(events_path + ": missing trace file");
  struct stat st;
  const bool try_cache = src == TraceSource::Cache || wrote || (src == TraceSource::Auto && stat(cache_path.c_str(), &st) == 0);
  const uint64_t key = try_cache ? trace_key(meta_bytes, gz) : 0;
  if (try_cache) {
    try {
      read_cache(t, cache_path, key, line_bytes);
      if (wrote) *wrote = false;
      return t;
    } catch (const CacheInvalid& e) {
      if (src == TraceSource::Cache) throw std::runtime_error(cache_path + ": binary trace cache " + e.why + " (run `make traces`)");
      if (!wrote)
        fprintf(stderr, "apta-sim: %s: binary trace cache %s; parsing the text trace instead (`make traces` rewrites it)\n",
                cache_path.c_str(), e.why.c_str());
    }
  }
  parse_events(t, events_path, gunzip(gz, events_path), line_bytes);
  if (wrote) {
    write_cache(t, cache_path, key, line_bytes);
    *wrote = true;
  }
  return t;
}

TraceInstance load_trace(const std::string& dir, unsigned line_bytes, TraceSource src) {
  return load(dir, line_bytes, src, nullptr);
}

bool write_trace_cache(const std::string& dir, unsigned line_bytes) {
  bool wrote = false;
  load(dir, line_bytes, TraceSource::Auto, &wrote);
  return wrote;
}

}  // namespace apta
