/* concat: join the validated parts in manifest order into the transcoded video, which replaces
 * the original `video` object. Refuses a manifest that failed validation or does not match the
 * parts. get part_0 .. part_<ways-1>, manifest -> put video. */
#include <stdio.h>

#include "apta_store.h"
#include "video.h"

int apta_function(void) {
  long ways = apta_param_long("ways", 2);
  part *p = apta_xmalloc(sizeof(part) * (size_t)ways);
  for (long i = 0; i < ways; i++) {
    char name[32];
    snprintf(name, sizeof name, "part_%ld", i);
    apta_bytes b = apta_get(name);
    p[i] = part_read(b.data, b.len, name);
  }
  apta_bytes mb = apta_get("manifest");
  apta_rd r = apta_rd_init(mb.data, mb.len, "manifest");
  apta_rd_magic(&r, "MANI");
  uint32_t nparts = apta_rd_u32(&r), total = apta_rd_u32(&r), w = apta_rd_u32(&r), h = apta_rd_u32(&r), ok = apta_rd_u32(&r);
  if (!ok) apta_die("concat: the manifest says validation failed");
  if (nparts != (uint32_t)ways) apta_die("concat: manifest has %u parts, expected %ld", nparts, ways);
  size_t fs = (size_t)w * h;
  apta_buf out = {0};
  apta_buf_put(&out, "VID1", 4);
  apta_buf_u32(&out, w); apta_buf_u32(&out, h); apta_buf_u32(&out, total); apta_buf_u32(&out, 0);
  uint32_t frames = 0;
  for (uint32_t i = 0; i < nparts; i++) {
    uint32_t first = apta_rd_u32(&r), n = apta_rd_u32(&r);
    uint64_t sum = apta_rd_u64(&r);
    if (first != p[i].first || n != p[i].n || sum != p[i].checksum) apta_die("concat: part_%u does not match the manifest", i);
    apta_buf_put(&out, p[i].frames, fs * n);
    frames += n;
  }
  if (frames != total) apta_die("concat: %u frames, manifest says %u", frames, total);
  apta_put("video", out.data, out.len);
  return 0;
}
