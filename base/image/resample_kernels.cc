// Exactness: every product pixel * weight and every partial sum is an integer well inside
// int32 (Pillow's 2 bits of headroom), so sums may be taken in any order and weights split
// as k = (k >> 8) * 256 + (k & 255): 16-bit multiply-adds (pmaddwd) then give the same sums.
#include "base/image/resample_kernels.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace bm::image::internal {
namespace {

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
    for (; 2 * q + 1 < count; q += 2) {
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
}

void HorizontalKernel::Row(const uint8_t* in, uint8_t* out) const {
#if defined(__x86_64__)
  if (simd_) {
    HorizontalRowSse41(taps_, in_width_, pairs_, hi_.data(), lo_.data(), in, out);
    return;
  }
#endif
  HorizontalRowScalar(taps_, in, out);
}

void VerticalRow(const uint8_t* const* rows, const int32_t* k, int taps, int n, uint8_t* out) {
#if defined(__x86_64__)
  static const bool avx2 = CpuHasAvx2();
  if (avx2) {
    VerticalRowAvx2(rows, k, taps, n, out);
    return;
  }
#endif
  VerticalRowScalar(rows, k, taps, n, out);
}

}  // namespace bm::image::internal
