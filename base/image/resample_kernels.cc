// Exactness: every product pixel * weight and every partial sum is an integer well inside
// int32 (Pillow's 2 bits of headroom), so sums may be taken in any order and weights split
// as k = (k >> 8) * 256 + (k & 255): 16-bit multiply-adds (pmaddwd) then give the same sums.
#include "base/image/resample_kernels.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace bm::image::internal {
namespace {

KernelLevel kernel_level = KernelLevel::kBest;

inline uint8_t Clip8(int32_t sum) {
  const int32_t v = sum >> kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

void HorizontalRowScalar(const Taps& taps, const uint8_t* in, uint8_t* out) {
  const int positions = static_cast<int>(taps.start.size());
  for (int i = 0; i < positions; ++i) {
    const int32_t* k = taps.of(i);
    const uint8_t* p = in + static_cast<size_t>(taps.start[i]) * 3;
    int32_t s0 = kHalf, s1 = kHalf, s2 = kHalf;
    for (int t = 0; t < taps.count[i]; ++t, p += 3) {
      s0 += p[0] * k[t];
      s1 += p[1] * k[t];
      s2 += p[2] * k[t];
    }
    out[3 * i + 0] = Clip8(s0);
    out[3 * i + 1] = Clip8(s1);
    out[3 * i + 2] = Clip8(s2);
  }
}

bool CpuHasSse41() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.1") != 0;
#else
  return false;
#endif
}

bool CpuHasAvx2() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
#else
  return false;
#endif
}

#if defined(__x86_64__)
// Lanes (r_t, r_t+1, g_t, g_t+1, b_t, b_t+1, 0, 0) as int16 from the 6 bytes of two pixels
// at byte 0 (pair 0) or byte 6 (pair 1) of a 16-byte load.
__attribute__((target("sse4.1"))) inline __m128i PairMask(int pair) {
  const char o = static_cast<char>(6 * pair);
  const char z = static_cast<char>(0x80);
  return _mm_setr_epi8(o, z, static_cast<char>(o + 3), z, static_cast<char>(o + 1), z,
                       static_cast<char>(o + 4), z, static_cast<char>(o + 2), z,
                       static_cast<char>(o + 5), z, z, z, z, z);
}

__attribute__((target("sse4.1"))) void HorizontalRowSse41(const Taps& taps, int in_width, int pairs,
                                                          const int16_t* hi, const int16_t* lo,
                                                          const uint8_t* in, uint8_t* out) {
  const int positions = static_cast<int>(taps.start.size());
  const __m128i half = _mm_set1_epi32(kHalf);
  const __m128i mask0 = PairMask(0), mask1 = PairMask(1);
  const size_t row_bytes = static_cast<size_t>(in_width) * 3;
  for (int i = 0; i < positions; ++i) {
    const int start = taps.start[i], count = taps.count[i];
    const int16_t* h = hi + static_cast<size_t>(i) * pairs * 8;
    const int16_t* l = lo + static_cast<size_t>(i) * pairs * 8;
    __m128i sum_hi = _mm_setzero_si128(), sum_lo = _mm_setzero_si128();
    int q = 0;  // tap pair
    // Four taps (two pairs) per 16-byte load while the load stays inside the row.
    for (; 2 * q < count; q += 2) {
      const size_t offset = static_cast<size_t>(start + 2 * q) * 3;
      if (offset + 16 > row_bytes) break;
      const __m128i px = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + offset));
      const __m128i p0 = _mm_shuffle_epi8(px, mask0);
      const __m128i p1 = _mm_shuffle_epi8(px, mask1);
      const __m128i* hv = reinterpret_cast<const __m128i*>(h + 8 * q);
      const __m128i* lv = reinterpret_cast<const __m128i*>(l + 8 * q);
      sum_hi = _mm_add_epi32(sum_hi, _mm_madd_epi16(p0, _mm_loadu_si128(hv)));
      sum_lo = _mm_add_epi32(sum_lo, _mm_madd_epi16(p0, _mm_loadu_si128(lv)));
      if (2 * q + 2 < count) {  // the second pair exists (its weights are zero past count)
        sum_hi = _mm_add_epi32(sum_hi, _mm_madd_epi16(p1, _mm_loadu_si128(hv + 1)));
        sum_lo = _mm_add_epi32(sum_lo, _mm_madd_epi16(p1, _mm_loadu_si128(lv + 1)));
      }
    }
    // The rest pair by pair from bytes read one at a time (no read past the taps).
    for (; 2 * q < count; ++q) {
      const uint8_t* p = in + static_cast<size_t>(start + 2 * q) * 3;
      const bool second = 2 * q + 1 < count;
      const __m128i pv = _mm_setr_epi16(p[0], second ? p[3] : 0, p[1], second ? p[4] : 0, p[2],
                                        second ? p[5] : 0, 0, 0);
      sum_hi = _mm_add_epi32(
          sum_hi, _mm_madd_epi16(pv, _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 8 * q))));
      sum_lo = _mm_add_epi32(
          sum_lo, _mm_madd_epi16(pv, _mm_loadu_si128(reinterpret_cast<const __m128i*>(l + 8 * q))));
    }
    __m128i sum = _mm_add_epi32(_mm_add_epi32(_mm_slli_epi32(sum_hi, 8), sum_lo), half);
    sum = _mm_srai_epi32(sum, kPrecisionBits);
    const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(sum, sum), sum);
    const uint32_t rgbx = static_cast<uint32_t>(_mm_cvtsi128_si32(bytes));
    out[3 * i + 0] = static_cast<uint8_t>(rgbx);
    out[3 * i + 1] = static_cast<uint8_t>(rgbx >> 8);
    out[3 * i + 2] = static_cast<uint8_t>(rgbx >> 16);
  }
}

// As HorizontalRowSse41, two output positions at once: position i in the low 128-bit lane,
// i + 1 in the high one, each lane loading from its own start (hi2/lo2: the two positions'
// lanes side by side). An odd last position goes through the SSE4.1 kernel.
__attribute__((target("avx2"))) void HorizontalRowAvx2(const Taps& taps, int in_width, int pairs,
                                                       const int16_t* hi2, const int16_t* lo2,
                                                       const uint8_t* in, uint8_t* out) {
  const int positions = static_cast<int>(taps.start.size());
  const __m256i half = _mm256_set1_epi32(kHalf);
  const __m256i mask0 = _mm256_broadcastsi128_si256(PairMask(0));
  const __m256i mask1 = _mm256_broadcastsi128_si256(PairMask(1));
  const size_t row_bytes = static_cast<size_t>(in_width) * 3;
  int i = 0;
  for (; i + 1 < positions; i += 2) {
    const int start_a = taps.start[i], start_b = taps.start[i + 1];
    const int count_a = taps.count[i], count_b = taps.count[i + 1];
    const int count = std::max(count_a, count_b);
    const int16_t* h = hi2 + static_cast<size_t>(i / 2) * pairs * 16;
    const int16_t* l = lo2 + static_cast<size_t>(i / 2) * pairs * 16;
    __m256i sum_hi = _mm256_setzero_si256(), sum_lo = _mm256_setzero_si256();
    int q = 0;  // tap pair
    for (; 2 * q < count; q += 2) {
      const size_t off_a = static_cast<size_t>(start_a + 2 * q) * 3;
      const size_t off_b = static_cast<size_t>(start_b + 2 * q) * 3;
      if (off_a + 16 > row_bytes || off_b + 16 > row_bytes) break;
      const __m256i px = _mm256_inserti128_si256(
          _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + off_a))),
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + off_b)), 1);
      const __m256i p0 = _mm256_shuffle_epi8(px, mask0);
      const __m256i* hv = reinterpret_cast<const __m256i*>(h + 16 * q);
      const __m256i* lv = reinterpret_cast<const __m256i*>(l + 16 * q);
      sum_hi = _mm256_add_epi32(sum_hi, _mm256_madd_epi16(p0, _mm256_loadu_si256(hv)));
      sum_lo = _mm256_add_epi32(sum_lo, _mm256_madd_epi16(p0, _mm256_loadu_si256(lv)));
      if (2 * q + 2 < count) {  // weights are zero past each position's own count
        const __m256i p1 = _mm256_shuffle_epi8(px, mask1);
        sum_hi = _mm256_add_epi32(sum_hi, _mm256_madd_epi16(p1, _mm256_loadu_si256(hv + 1)));
        sum_lo = _mm256_add_epi32(sum_lo, _mm256_madd_epi16(p1, _mm256_loadu_si256(lv + 1)));
      }
    }
    // The rest pair by pair from bytes read one at a time (no read past either's taps).
    for (; 2 * q < count; ++q) {
      const int t0 = 2 * q, t1 = 2 * q + 1;
      const uint8_t* a = in + static_cast<size_t>(start_a + t0) * 3;
      const uint8_t* b = in + static_cast<size_t>(start_b + t0) * 3;
      auto at = [](const uint8_t* p, int t, int n, int c) -> int16_t { return t < n ? p[c] : 0; };
      const __m256i pv = _mm256_setr_epi16(
          at(a, t0, count_a, 0), at(a + 3, t1, count_a, 0), at(a, t0, count_a, 1),
          at(a + 3, t1, count_a, 1), at(a, t0, count_a, 2), at(a + 3, t1, count_a, 2), 0, 0,
          at(b, t0, count_b, 0), at(b + 3, t1, count_b, 0), at(b, t0, count_b, 1),
          at(b + 3, t1, count_b, 1), at(b, t0, count_b, 2), at(b + 3, t1, count_b, 2), 0, 0);
      sum_hi = _mm256_add_epi32(
          sum_hi,
          _mm256_madd_epi16(pv, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + 16 * q))));
      sum_lo = _mm256_add_epi32(
          sum_lo,
          _mm256_madd_epi16(pv, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(l + 16 * q))));
    }
    __m256i sum = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(sum_hi, 8), sum_lo), half);
    sum = _mm256_srai_epi32(sum, kPrecisionBits);
    const __m256i bytes = _mm256_packus_epi16(_mm256_packs_epi32(sum, sum), sum);
    const uint32_t rgb_a = static_cast<uint32_t>(_mm256_cvtsi256_si32(bytes));
    const uint32_t rgb_b =
        static_cast<uint32_t>(_mm_cvtsi128_si32(_mm256_extracti128_si256(bytes, 1)));
    uint8_t* o = out + 3 * static_cast<size_t>(i);
    o[0] = static_cast<uint8_t>(rgb_a);
    o[1] = static_cast<uint8_t>(rgb_a >> 8);
    o[2] = static_cast<uint8_t>(rgb_a >> 16);
    o[3] = static_cast<uint8_t>(rgb_b);
    o[4] = static_cast<uint8_t>(rgb_b >> 8);
    o[5] = static_cast<uint8_t>(rgb_b >> 16);
  }
}

__attribute__((target("avx2"))) void VerticalRowAvx2(const uint8_t* const* rows, const int32_t* k,
                                                     int taps, int n, uint8_t* out) {
  const __m256i half = _mm256_set1_epi32(kHalf);
  int j = 0;
  for (; j + 16 <= n; j += 16) {
    __m256i a0 = half, a1 = half;
    for (int t = 0; t < taps; ++t) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[t] + j));
      const __m256i kv = _mm256_set1_epi32(k[t]);
      a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(v), kv));
      a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)), kv));
    }
    a0 = _mm256_srai_epi32(a0, kPrecisionBits);
    a1 = _mm256_srai_epi32(a1, kPrecisionBits);
    // Saturating packs clamp to 0..255 (the shifted sums lie in -640..639).
    const __m256i s16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(a0, a1), 0xD8);
    const __m128i u8 =
        _mm_packus_epi16(_mm256_castsi256_si128(s16), _mm256_extracti128_si256(s16, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), u8);
  }
  for (; j < n; ++j) {
    int32_t s = kHalf;
    for (int t = 0; t < taps; ++t) s += rows[t][j] * k[t];
    out[j] = Clip8(s);
  }
}
#endif

void VerticalRowScalar(const uint8_t* const* rows, const int32_t* k, int taps, int n,
                       uint8_t* out) {
  for (int j = 0; j < n; ++j) {
    int32_t s = kHalf;
    for (int t = 0; t < taps; ++t) s += rows[t][j] * k[t];
    out[j] = Clip8(s);
  }
}

}  // namespace

HorizontalKernel::HorizontalKernel(const Taps& taps, int in_width)
    : taps_(taps), in_width_(in_width), simd_(CpuHasSse41()) {
  if (!simd_) return;
  pairs_ = (taps.ksize + 1) / 2;
  const size_t positions = taps.start.size();
  hi_.assign(positions * pairs_ * 8, 0);
  lo_.assign(positions * pairs_ * 8, 0);
  for (size_t i = 0; i < positions; ++i) {
    const int32_t* k = taps.of(static_cast<int>(i));
    for (int t = 0; t < taps.count[i]; ++t) {
      // k = (k >> 8) * 256 + (k & 255), arithmetic shift: both parts fit int16.
      const int32_t h32 = k[t] >> 8;
      if (h32 > 32767 || h32 < -32768) {  // a weight over 2^23: beyond any filter here
        simd_ = false;
        return;
      }
      const int16_t h = static_cast<int16_t>(h32);
      const int16_t l = static_cast<int16_t>(k[t] & 255);
      int16_t* hp = hi_.data() + (i * pairs_ + t / 2) * 8;
      int16_t* lp = lo_.data() + (i * pairs_ + t / 2) * 8;
      for (int c = 0; c < 3; ++c) {
        hp[2 * c + t % 2] = h;
        lp[2 * c + t % 2] = l;
      }
    }
  }
  avx2_ = CpuHasAvx2();
  if (!avx2_) return;
  // Positions 2j and 2j + 1 side by side: 16 lanes per tap pair.
  const size_t duos = positions / 2;
  hi2_.assign(duos * pairs_ * 16, 0);
  lo2_.assign(duos * pairs_ * 16, 0);
  for (size_t j = 0; j < duos; ++j) {
    for (int q = 0; q < pairs_; ++q) {
      for (int half = 0; half < 2; ++half) {
        const size_t from = ((2 * j + half) * pairs_ + q) * 8;
        const size_t to = (j * pairs_ + q) * 16 + 8 * half;
        std::memcpy(hi2_.data() + to, hi_.data() + from, 8 * sizeof(int16_t));
        std::memcpy(lo2_.data() + to, lo_.data() + from, 8 * sizeof(int16_t));
      }
    }
  }
}

void HorizontalKernel::Row(const uint8_t* in, uint8_t* out) const {
#if defined(__x86_64__)
  if (simd_ && kernel_level != KernelLevel::kScalar) {
    const int positions = static_cast<int>(taps_.start.size());
    if (avx2_ && kernel_level == KernelLevel::kBest) {
      HorizontalRowAvx2(taps_, in_width_, pairs_, hi2_.data(), lo2_.data(), in, out);
      if (positions % 2 == 0) return;
      // The odd last position: a one-position kernel on a one-position view of the taps.
      const int last = positions - 1;
      const int32_t* k = taps_.of(last);
      const uint8_t* p = in + static_cast<size_t>(taps_.start[last]) * 3;
      int32_t s0 = kHalf, s1 = kHalf, s2 = kHalf;
      for (int t = 0; t < taps_.count[last]; ++t, p += 3) {
        s0 += p[0] * k[t];
        s1 += p[1] * k[t];
        s2 += p[2] * k[t];
      }
      out[3 * last + 0] = Clip8(s0);
      out[3 * last + 1] = Clip8(s1);
      out[3 * last + 2] = Clip8(s2);
      return;
    }
    HorizontalRowSse41(taps_, in_width_, pairs_, hi_.data(), lo_.data(), in, out);
    return;
  }
#endif
  HorizontalRowScalar(taps_, in, out);
}

void VerticalRow(const uint8_t* const* rows, const int32_t* k, int taps, int n, uint8_t* out) {
#if defined(__x86_64__)
  static const bool avx2 = CpuHasAvx2();
  if (avx2 && kernel_level == KernelLevel::kBest) {
    VerticalRowAvx2(rows, k, taps, n, out);
    return;
  }
#endif
  VerticalRowScalar(rows, k, taps, n, out);
}

void LimitKernels(KernelLevel level) { kernel_level = level; }

}  // namespace bm::image::internal
