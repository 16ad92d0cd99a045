// The rack's files (RINGS.md): maps the server file and one file per guest (never two the same),
// writes fresh headers (--init) or checks the server's, and rewrites each guest's header copy.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "daemon.h"

namespace apta_memd {

namespace {
// Maps `bytes` of `path` (the whole file if bytes is 0); nullptr after saying why. `ino` gets the
// file's identity (device, inode).
uint8_t* map_file(const std::string& path, uint64_t need, uint64_t bytes, uint64_t& size,
                  std::pair<uint64_t, uint64_t>& ino) {
  int fd = open(path.c_str(), O_RDWR);
  if (fd < 0) { say("%s: %s", path.c_str(), strerror(errno)); return nullptr; }
  struct stat st;
  if (fstat(fd, &st) < 0) { say("%s: fstat: %s", path.c_str(), strerror(errno)); close(fd); return nullptr; }
  size = uint64_t(st.st_size);
  ino = {uint64_t(st.st_dev), uint64_t(st.st_ino)};
  if (size < need) {
    say("%s: %" PRIu64 " bytes, needs at least %" PRIu64, path.c_str(), size, need);
    close(fd);
    return nullptr;
  }
  void* p = mmap(nullptr, bytes ? bytes : size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) { say("%s: mmap: %s", path.c_str(), strerror(errno)); return nullptr; }
  return static_cast<uint8_t*>(p);
}

void write_header(uint8_t* b, uint32_t slots, uint64_t data_bytes, uint32_t guest) {
  memset(b, 0, APTA_HEADER_BYTES);
  memcpy(b + APTA_HDR_MAGIC, APTA_MAGIC, APTA_MAGIC_BYTES);
  apta_st32(b, APTA_HDR_VERSION, APTA_LAYOUT_VERSION);
  apta_st32(b, APTA_HDR_GUESTS, N);
  apta_st32(b, APTA_HDR_RING_SLOTS, slots);
  apta_st32(b, APTA_HDR_SLOT_BYTES, APTA_SLOT_BYTES);
  apta_st64(b, APTA_HDR_DATA_OFFSET, APTA_DATA_OFFSET);
  apta_st64(b, APTA_HDR_DATA_BYTES, data_bytes);
  apta_st32(b, APTA_HDR_GUEST, guest);
}
}  // namespace

void Daemon::set_state(uint32_t v) {
  apta_st32(R_.base, APTA_HDR_DAEMON_STATE, v);
  for (unsigned g = 0; g < N; g++) apta_st32(R_.guest[g], APTA_HDR_DAEMON_STATE, v);
}

int Daemon::open_region() {
  uint64_t size = 0;
  std::pair<uint64_t, uint64_t> ino;
  std::map<std::pair<uint64_t, uint64_t>, std::string> seen;  // one file per party: no two the same
  R_.base = map_file(opt_.file, APTA_DATA_OFFSET + 4096, 0, size, ino);
  if (!R_.base) return -1;
  seen[ino] = opt_.file;
  R_.bytes = size;
  std::string pat = opt_.guest_file;
  if (pat.empty()) {  // the rack directory: the server file's
    size_t slash = opt_.file.rfind('/');
    pat = (slash == std::string::npos ? std::string() : opt_.file.substr(0, slash + 1)) + APTA_GUEST_FILE_FMT;
  }
  for (unsigned g = 0; g < N; g++) {
    char path[4096];
    snprintf(path, sizeof path, pat.c_str(), g);
    R_.guest[g] = map_file(path, APTA_GUEST_FILE_BYTES, APTA_GUEST_FILE_BYTES, size, ino);
    if (!R_.guest[g]) return -1;
    if (!seen.emplace(ino, path).second) {  // shared with the server or another guest: no isolation
      say("%s (guest %u) is the same file as %s: every guest needs its own file (RINGS.md)", path, g,
          seen[ino].c_str());
      return -1;
    }
  }
  uint8_t* b = R_.base;
  if (opt_.init) {
    write_header(b, opt_.slots, R_.data_bytes(), APTA_SERVER_GUEST);
    for (unsigned g = 0; g < N; g++) memset(R_.guest[g] + APTA_GUEST_AREA, 0, APTA_GUEST_AREA_BYTES);
    say("initialized %s and %u guest files (%s): %u slots, %" PRIu64 " data bytes", opt_.file.c_str(), N,
        pat.c_str(), opt_.slots, R_.data_bytes());
  } else if (memcmp(b + APTA_HDR_MAGIC, APTA_MAGIC, APTA_MAGIC_BYTES) != 0 ||
             apta_ld32(b, APTA_HDR_VERSION) != APTA_LAYOUT_VERSION || apta_ld32(b, APTA_HDR_GUESTS) != N ||
             apta_ld32(b, APTA_HDR_SLOT_BYTES) != APTA_SLOT_BYTES ||
             apta_ld64(b, APTA_HDR_DATA_OFFSET) != APTA_DATA_OFFSET || apta_ld32(b, APTA_HDR_GUEST) != APTA_SERVER_GUEST) {
    say("%s: no layout v%u server header for %u guests (use --init)", opt_.file.c_str(), APTA_LAYOUT_VERSION, N);
    return -1;
  }
  R_.slots = apta_ld32(b, APTA_HDR_RING_SLOTS);  // the server's copy: a guest's copy is never read back
  if (R_.slots == 0 || (R_.slots & (R_.slots - 1)) || R_.slots > APTA_MAX_SLOTS) {
    say("header: ring slots %u not a power of two <= %u", R_.slots, APTA_MAX_SLOTS);
    return -1;
  }
  // each guest's header copy is rewritten from the server's (a guest may have scribbled on its own)
  for (unsigned g = 0; g < N; g++) memcpy(R_.guest[g], b, APTA_HEADER_BYTES), apta_st32(R_.guest[g], APTA_HDR_GUEST, g);
  set_state(APTA_DAEMON_STARTING);
  uint64_t t = now_ns();
  for (unsigned g = 0; g < N; g++) {
    Guest& G = guests_[g];
    G.req_off = apta_ring_off(APTA_RING_REQUEST);
    G.rsp.off = apta_ring_off(APTA_RING_RESPONSE);
    G.inv.off = apta_ring_off(APTA_RING_INVALIDATION);
    G.rsp.g = G.inv.g = g;
    // Resume where the previous daemon stopped: the daemon is the only writer of these words.
    G.req_tail = R_.ld64(g, G.req_off + APTA_RING_TAIL);
    G.rsp.head = R_.ld64(g, G.rsp.off + APTA_RING_HEAD);
    G.inv.head = R_.ld64(g, G.inv.off + APTA_RING_HEAD);
    G.hb_last = R_.ld64(g, APTA_GUEST_AREA + APTA_CTL_HEARTBEAT);
    G.hb_change_ns = t;  // every guest gets one lease from the daemon's start
  }
  return 0;
}

}  // namespace apta_memd
