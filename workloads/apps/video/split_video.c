/* splitVideo: split the video into `ways` chunks (workflow param, default 2) of nearly equal
 * length, each starting on a GOP boundary (`gop` frames, default 8), for the parallel analyzers.
 * get video -> put chunk_0 .. chunk_<ways-1>. */
#include <stdio.h>

#include "apta_store.h"
#include "video.h"

int apta_function(void) {
  apta_bytes in = apta_get("video");
  video v = video_read(in.data, in.len, "video");
  long ways = apta_param_long("ways", 2), gop = apta_param_long("gop", 8);
  if (ways < 1 || gop < 1) apta_die("splitVideo: bad ways/gop");
  size_t fs = (size_t)v.w * v.h;
  uint32_t start = 0;
  for (long c = 0; c < ways; c++) {
    uint32_t end = c == ways - 1 ? v.n : (uint32_t)(((v.n * (c + 1) / ways) + gop / 2) / gop * gop);
    if (end > v.n) end = v.n;
    if (end < start) end = start;
    apta_buf b = {0};
    video_write(&b, v.w, v.h, end - start, v.first + start, v.frames + fs * start);
    char name[32];
    snprintf(name, sizeof name, "chunk_%ld", c);
    apta_put(name, b.data, b.len);
    apta_buf_free(&b);
    start = end;
  }
  return 0;
}
