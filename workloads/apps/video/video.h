/* video.h: objects of the video workflow.
 * video, chunk_<i> (raw 8-bit luma frames): "VID1" u32 width, height, nframes, first frame index,
 *                  then nframes x width x height bytes.
 * keyframes:       "KEY1" u32 n, n x u32 frame index (scene cuts; always frame 0).
 * part_<i>:        "PART" u32 chunk, first frame, nframes, width, height; u64 checksum (FNV-1a of the
 *                  frames), frames (transcoded), nframes x {u32 frame, u32 shot; f32 mean, motion,
 *                  psnr; u32 nonzero coefficients}.
 * manifest:        "MANI" u32 nparts, total frames, width, height, ok; nparts x {u32 first, n; u64 checksum}. */
#ifndef VIDEO_H
#define VIDEO_H
#include "apta_util.h"

typedef struct { uint32_t w, h, n, first; const uint8_t *frames; } video;

static inline video video_read(const uint8_t *p, size_t len, const char *what) {
  apta_rd r = apta_rd_init(p, len, what);
  apta_rd_magic(&r, "VID1");
  video v;
  v.w = apta_rd_u32(&r); v.h = apta_rd_u32(&r); v.n = apta_rd_u32(&r); v.first = apta_rd_u32(&r);
  v.frames = apta_rd_take(&r, (size_t)v.w * v.h * v.n);
  return v;
}

static inline void video_write(apta_buf *b, uint32_t w, uint32_t h, uint32_t n, uint32_t first, const uint8_t *frames) {
  apta_buf_put(b, "VID1", 4);
  apta_buf_u32(b, w); apta_buf_u32(b, h); apta_buf_u32(b, n); apta_buf_u32(b, first);
  apta_buf_put(b, frames, (size_t)w * h * n);
}

typedef struct { uint32_t frame, shot; float mean, motion, psnr; uint32_t nnz; } frame_stat;
typedef struct { uint32_t chunk, first, n, w, h; uint64_t checksum; const uint8_t *frames; frame_stat *stats; } part;

static inline part part_read(const uint8_t *p, size_t len, const char *what) {
  apta_rd r = apta_rd_init(p, len, what);
  apta_rd_magic(&r, "PART");
  part q;
  q.chunk = apta_rd_u32(&r); q.first = apta_rd_u32(&r); q.n = apta_rd_u32(&r); q.w = apta_rd_u32(&r); q.h = apta_rd_u32(&r);
  q.checksum = apta_rd_u64(&r);
  q.frames = apta_rd_take(&r, (size_t)q.w * q.h * q.n);
  q.stats = apta_xmalloc(sizeof(frame_stat) * (q.n + 1));
  for (uint32_t i = 0; i < q.n; i++) {
    q.stats[i].frame = apta_rd_u32(&r); q.stats[i].shot = apta_rd_u32(&r); q.stats[i].mean = apta_rd_f32(&r);
    q.stats[i].motion = apta_rd_f32(&r); q.stats[i].psnr = apta_rd_f32(&r); q.stats[i].nnz = apta_rd_u32(&r);
  }
  return q;
}
#endif
