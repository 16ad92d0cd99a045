// Loading one function instance's trace directory (workloads/TRACES.md) into a compact in-memory
// form the replay loop walks without parsing: events with their op counts and line ranges, each
// range already split at object boundaries and tagged local or "object slot k". That form is also
// kept on disk beside the text, in the directory's binary trace cache (`make traces` writes it;
// keyed on the bytes of meta.json and the events file, the line size and the format version), which
// loads about two orders of magnitude faster than gunzip + parse.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace apta {

enum Phase : uint8_t { PH_GET = 0, PH_COMPUTE = 1, PH_PUT = 2, PH_END = 3, PH_NONE = 4 };

struct TraceObject {
  std::string kind;   // "get" or "put"
  std::string name;
  uint64_t addr = 0;  // first byte of the buffer in the traced process
  uint64_t len = 0;
};

struct Range {
  uint64_t first_line;  // local: absolute line number (addr / 64); object: line offset in the object
  uint32_t lines;
  uint8_t slot;         // 0xFF local memory, else index into TraceInstance::objects
  uint8_t write;
  uint16_t pad = 0;     // explicit, so the cache file's bytes are deterministic
};

struct Event {
  uint64_t ops;         // iops + flops: replayed at the fixed CPI
  uint32_t first_range; // into TraceInstance::ranges
  uint32_t nranges;
};

// A read-only array of a trace: in the parsed text's vectors or in the mapped cache file, which
// TraceInstance::storage keeps alive (copies of a TraceInstance share it).
template <class T>
struct TraceArray {
  const T* p = nullptr;
  size_t n = 0;
  const T& operator[](size_t i) const { return p[i]; }
  size_t size() const { return n; }
  const T* begin() const { return p; }
  const T* end() const { return p + n; }
};

struct TraceInstance {
  std::string dir;
  std::vector<TraceObject> objects;
  TraceArray<Event> events;
  TraceArray<Range> ranges;
  std::shared_ptr<const void> storage;  // what events and ranges point into
  uint32_t phase_begin[5] = {0, 0, 0, 0, 0};  // events [phase_begin[p], phase_begin[p+1]) are phase p
  uint64_t instructions = 0, reads = 0, writes = 0;
  bool has_phase[4] = {false, false, false, false};
  bool from_cache = false;  // loaded from the binary trace cache, not parsed from the text
};

// Where load_trace takes the events from: Auto = the binary cache when it is valid for this trace,
// else the text (a cache file that is stale, truncated or corrupt is reported on stderr, naming the
// file and the problem, and the text is parsed; a missing one silently); Text = always the text;
// Cache = only the cache (an error naming the file when it is missing or invalid).
enum class TraceSource { Auto, Text, Cache };
TraceSource trace_source_from(const std::string& name);  // "auto", "text", "cache"

// The cache file of a trace directory (workloads/TRACES.md).
constexpr const char* kTraceCacheFile = "replay-cache.bin";

// Throws std::runtime_error("<file>:<line>: <field>: <problem>") on malformed input and
// "<dir>: missing trace (no meta.json)" when the directory is absent or incomplete.
TraceInstance load_trace(const std::string& dir, unsigned line_bytes, TraceSource src = TraceSource::Auto);

// Writes DIR's binary trace cache (to a temporary file, renamed) unless a valid one is there.
// Returns true when it wrote one. Throws on malformed text, as load_trace.
bool write_trace_cache(const std::string& dir, unsigned line_bytes);

}  // namespace apta
