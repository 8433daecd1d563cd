// What the AVX-512 kernels share: the target attribute their functions compile under, tail
// masks, a horizontal sum, a 16 x 16 transpose, and loads of sixteen f32, bf16 or f16 weights as
// floats. Include only from files whose AVX-512 functions carry KVD_AVX512, so that nothing else in
// the binary needs more than the baseline x86-64.
#pragma once

#include <cstdint>

#include "kernels/cpu/isa_targets.h"

namespace kvd::kernels::cpu {

// The first `left` of sixteen lanes (all sixteen from 16 on).
KVD_AVX512 inline __mmask16 TailMask(int64_t left) {
  return left >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << left) - 1);
}

// The sum of v's lanes, added in the order HorizontalSums4 adds each of its vectors' (lanes i
// and i + 2 of each 128-bit quarter, then i and i + 1; quarters q and q + 2, then q and q + 1),
// so that an output's bits never depend on which of the two summed it.
KVD_AVX512 inline float HorizontalSum(__m512 v) {
  const __m512 pairs = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m512 quarters = _mm512_add_ps(pairs, _mm512_permute_ps(pairs, _MM_SHUFFLE(2, 3, 0, 1)));
  const __m256 eight =
      _mm256_add_ps(_mm512_castps512_ps256(quarters), _mm512_extractf32x8_ps(quarters, 1));
  return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(eight), _mm256_extractf128_ps(eight, 1)));
}

// The horizontal sums of four vectors side by side: [Σa, Σb, Σc, Σd], in 13 operations where
// four HorizontalSum calls take 32.
KVD_AVX512 inline __m128 HorizontalSums4(__m512 a, __m512 b, __m512 c, __m512 d) {
  // Per 128-bit lane: a's and b's halves summed, interleaved; then a, b, c and d a float each.
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  const __m512d ab_pairs = _mm512_castps_pd(ab);
  const __m512d cd_pairs = _mm512_castps_pd(cd);
  const __m512 abcd = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(ab_pairs, cd_pairs)),
                                    _mm512_castpd_ps(_mm512_unpackhi_pd(ab_pairs, cd_pairs)));
  const __m256 eight = _mm256_add_ps(_mm512_castps512_ps256(abcd), _mm512_extractf32x8_ps(abcd, 1));
  return _mm_add_ps(_mm256_castps256_ps128(eight), _mm256_extractf128_ps(eight, 1));
}

// sums[r][c] = HorizontalSum(v[r][c]), four vectors at a time in row-major order.
template <int kRows, int kCols>
KVD_AVX512 inline __attribute__((always_inline)) void HorizontalSums(
    const __m512 (&v)[kRows][kCols], float (&sums)[kRows][kCols]) {
  constexpr int kCount = kRows * kCols;
  const __m512* flat_v = &v[0][0];
  float* flat = &sums[0][0];
  int j = 0;
#pragma GCC unroll 8
  for (; j + 4 <= kCount; j += 4) {
    _mm_storeu_ps(flat + j,
                  HorizontalSums4(flat_v[j], flat_v[j + 1], flat_v[j + 2], flat_v[j + 3]));
  }
#pragma GCC unroll 4
  for (; j < kCount; ++j) flat[j] = HorizontalSum(flat_v[j]);
}

// Transposes the 16 x 16 block in v: v[j] lane i becomes v[i] lane j.
KVD_AVX512 inline __attribute__((always_inline)) void Transpose16(__m512 (&v)[16]) {
  __m512 t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
  }
  // u[4g + m], 128-bit lane L: element 4L + m of rows 4g .. 4g + 3.
  __m512 u[16];
#pragma GCC unroll 16
  for (int g = 0; g < 4; ++g) {
    u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
    u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
    u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
    u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
  }
#pragma GCC unroll 16
  for (int m = 0; m < 4; ++m) {
    const __m512 low_even = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88);
    const __m512 low_odd = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xdd);
    const __m512 high_even = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88);
    const __m512 high_odd = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xdd);
    v[m] = _mm512_shuffle_f32x4(low_even, high_even, 0x88);
    v[4 + m] = _mm512_shuffle_f32x4(low_odd, high_odd, 0x88);
    v[8 + m] = _mm512_shuffle_f32x4(low_even, high_even, 0xdd);
    v[12 + m] = _mm512_shuffle_f32x4(low_odd, high_odd, 0xdd);
  }
}

// Sixteen 16-bit values from `at` on; under a mask, those it selects (the others zero).
template <bool kMasked>
KVD_AVX512 inline __m256i LoadHalves(const void* base, int64_t at, __mmask16 mask) {
  const uint16_t* p = static_cast<const uint16_t*>(base) + at;
  if constexpr (kMasked) return _mm256_maskz_loadu_epi16(mask, p);
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

template <bool kMasked>
KVD_AVX512 inline __m512 LoadFloats(const float* p, __mmask16 mask) {
  if constexpr (kMasked) return _mm512_maskz_loadu_ps(mask, p);
  return _mm512_loadu_ps(p);
}

// Sixteen weights from index `at` on, as floats; under a mask, those it selects.
struct F32Weights {
  static constexpr int64_t kBytes = 4;
  template <bool kMasked>
  KVD_AVX512 static __m512 Load(const void* base, int64_t at, __mmask16 mask) {
    return LoadFloats<kMasked>(static_cast<const float*>(base) + at, mask);
  }
};

struct Bf16Weights {
  static constexpr int64_t kBytes = 2;
  template <bool kMasked>
  KVD_AVX512 static __m512 Load(const void* base, int64_t at, __mmask16 mask) {
    const __m256i bits = LoadHalves<kMasked>(base, at, mask);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
};

struct F16Weights {
  static constexpr int64_t kBytes = 2;
  template <bool kMasked>
  KVD_AVX512 static __m512 Load(const void* base, int64_t at, __mmask16 mask) {
    return _mm512_cvtph_ps(LoadHalves<kMasked>(base, at, mask));
  }
};

}  // namespace kvd::kernels::cpu
