// Set-associative cache of 64-bit line keys with true LRU (timestamps), no data. Sizes and
// associativity come from Table II through sim/params.json.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <memory>
#include <new>
#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace apta {

class Cache {
 public:
  Cache() = default;
  Cache(uint64_t bytes, unsigned ways, unsigned line_bytes) { init(bytes, ways, line_bytes); }
  void init(uint64_t bytes, unsigned ways, unsigned line_bytes) {
    unsigned sets = unsigned(bytes / line_bytes / ways);
    if (sets == sets_ && ways == ways_ && tags_) { clear(); return; }
    ways_ = ways;
    sets_ = sets;
    mask_ = sets_ - 1;  // power-of-two set count (Table II sizes are)
    // 64-byte aligned: an 8-way set is one host cache line, a 16-way set two (a set straddling
    // lines made every lookup a split load and store)
    const size_t nbytes = (size_t(sets_) * ways_ * sizeof(uint64_t) + 63) / 64 * 64;
    tags_.reset(static_cast<uint64_t*>(std::aligned_alloc(64, nbytes ? nbytes : 64)));
    if (!tags_) throw std::bad_alloc();
    clear();
  }
  void clear() { std::fill(tags_.get(), tags_.get() + size_t(sets_) * ways_, kEmpty); }
  // Start loading the set of `key` into the host's caches (no change to the model's state).
  void prefetch(uint64_t key) const {
    const uint64_t* t = &tags_[size_t(hash(key) & mask_) * ways_];
    __builtin_prefetch(t, 1);
    if (ways_ > 8) __builtin_prefetch(t + 8, 1);
  }
  // Look up `key`; on a miss, allocate it (evicting the LRU way). Returns true on a hit.
  // Each set is kept in recency order (way 0 = most recent), so the common hit is found at
  // once and true LRU needs no timestamps: a hit or a fill moves the key to the front.
  bool access(uint64_t key) {
    uint64_t* t = &tags_[size_t(hash(key) & mask_) * ways_];
    if (t[0] == key) return true;
#ifdef __AVX512F__
    if (ways_ == 8) return mtf8_avx512(t, key);
    if (ways_ == 16) return mtf16_avx512(t, key);
#elif defined(__AVX2__)
    if (ways_ == 8) return mtf<8>(t, key);
    if (ways_ == 16) return mtf<16>(t, key);
#endif
    unsigned w = 1;
    while (w < ways_ && t[w] != key) ++w;
    bool hit = w < ways_;
    if (!hit) w = ways_ - 1;  // the least recently used (or an empty) way
    for (; w > 0; --w) t[w] = t[w - 1];
    t[0] = key;
    return hit;
  }

 private:
#ifdef __AVX512F__
  // The move-to-front of an 8-way set (one 64-byte host line, aligned) in one 512-bit register:
  // compare, then ways 1..p take their predecessor, way 0 the key, ways after p stay, where p is
  // the hit's way or, on a miss, the LRU way 7 (the `| 0x80`). The 16-way set is two registers.
  static bool mtf8_avx512(uint64_t* t, uint64_t key) {
    const __m512i k = _mm512_set1_epi64((long long)key);
    const __m512i v = _mm512_load_si512(t);
    const unsigned m = _mm512_cmpeq_epi64_mask(v, k);
    const unsigned p = unsigned(__builtin_ctz(m | 0x80u));
    const __m512i r = _mm512_mask_permutexvar_epi64(v, __mmask8((2u << p) - 2), _mm512_setr_epi64(0, 0, 1, 2, 3, 4, 5, 6), v);
    _mm512_store_si512(t, _mm512_mask_mov_epi64(r, 1, k));
    return m != 0;
  }
  static bool mtf16_avx512(uint64_t* t, uint64_t key) {
    const __m512i k = _mm512_set1_epi64((long long)key);
    const __m512i v0 = _mm512_load_si512(t), v1 = _mm512_load_si512(t + 8);
    const unsigned m = _mm512_cmpeq_epi64_mask(v0, k) | unsigned(_mm512_cmpeq_epi64_mask(v1, k)) << 8;
    const unsigned p = unsigned(__builtin_ctz(m | 0x8000u));
    const unsigned take = (2u << p) - 2;
    const __m512i r0 = _mm512_mask_permutexvar_epi64(v0, __mmask8(take), _mm512_setr_epi64(0, 0, 1, 2, 3, 4, 5, 6), v0);
    _mm512_store_si512(t, _mm512_mask_mov_epi64(r0, 1, k));
    _mm512_store_si512(t + 8, _mm512_mask_alignr_epi64(v1, __mmask8(take >> 8), v1, v0, 7));  // way 7, then ways 8..14
    return m != 0;
  }
#endif
#ifdef __AVX2__
  // The same move-to-front on an 8- or 16-way set (Table II's L1 and L2) without branches: the
  // search is one compare per 4 ways, the shift a permute + blend per 4 ways. About 1.7x the
  // scalar loop on the traces, whose hits land at every depth of a set (the scalar search
  // mispredicts). Results are identical to the scalar path (tests compare the counts).
  template <unsigned N>
  static bool mtf(uint64_t* t, uint64_t key) {
    constexpr unsigned C = N / 4;
    const __m256i k = _mm256_set1_epi64x((long long)key);
    __m256i v[C];
    unsigned m = 0;
    for (unsigned c = 0; c < C; ++c) {
      v[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t + 4 * c));
      m |= unsigned(_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(v[c], k)))) << (4 * c);
    }
    const long long p = m ? __builtin_ctz(m) : N - 1;  // the hit's way, or the LRU way on a miss
    const __m256i pv = _mm256_set1_epi64x(p);
    __m256i carry = k;                                  // what enters way 4c of each chunk
    for (unsigned c = 0; c < C; ++c) {
      __m256i sh = _mm256_blend_epi32(_mm256_permute4x64_epi64(v[c], 0x90), carry, 0x03);
      carry = _mm256_permute4x64_epi64(v[c], 0xFF);
      const long long b = 4 * c;
      const __m256i keep = _mm256_cmpgt_epi64(_mm256_setr_epi64x(b, b + 1, b + 2, b + 3), pv);  // ways after p stay
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(t + 4 * c), _mm256_blendv_epi8(sh, v[c], keep));
    }
    return m != 0;
  }
#endif
  static constexpr uint64_t kEmpty = ~0ull;
  // Keys are structured (object id / version / line, or address-space / line): mix the bits so
  // that the low bits that index the set are spread like physical line addresses would be.
  static uint64_t hash(uint64_t k) { return k ^ (k >> 29) ^ (k >> 47); }
  unsigned ways_ = 0, sets_ = 0, mask_ = 0;
  struct Free { void operator()(uint64_t* p) const { std::free(p); } };
  std::unique_ptr<uint64_t[], Free> tags_;
};

}  // namespace apta
