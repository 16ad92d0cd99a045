// Loading one function instance's trace directory (workloads/TRACES.md) into a compact in-memory
// form the replay loop walks without parsing: events with their op counts and line ranges, each
// range already split at object boundaries and tagged local or "object slot k".
#pragma once
#include <cstdint>
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
};

struct Event {
  uint64_t ops;         // iops + flops: replayed at the fixed CPI
  uint32_t first_range; // into TraceInstance::ranges
  uint32_t nranges;
};

struct TraceInstance {
  std::string dir;
  std::vector<TraceObject> objects;
  std::vector<Event> events;
  std::vector<Range> ranges;
  uint32_t phase_begin[5] = {0, 0, 0, 0, 0};  // events [phase_begin[p], phase_begin[p+1]) are phase p
  uint64_t instructions = 0, reads = 0, writes = 0;
  bool has_phase[4] = {false, false, false, false};
};

// Throws std::runtime_error("<file>:<line>: <field>: <problem>") on malformed input and
// "<dir>: missing trace (no meta.json)" when the directory is absent or incomplete.
TraceInstance load_trace(const std::string& dir, unsigned line_bytes);

}  // namespace apta
