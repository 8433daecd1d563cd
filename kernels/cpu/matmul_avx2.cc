// The AVX2 variant of the Linear products (matmul.h): tiles of four output features by two rows,
// eight inputs a step, each weight vector loaded once per tile and used for both rows. Compiled
// for AVX2 function by function (the target attribute), so that nothing else in the binary
// needs more than the baseline x86-64.
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/matmul.h"

#define KVD_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace kvd::kernels::cpu {
namespace {

// Eight weights from index `at` on, as floats; and one, for the inputs past the last full
// vector.
struct F32Weights {
  KVD_AVX2 static __m256 Load(const void* base, int64_t at) {
    return _mm256_loadu_ps(static_cast<const float*>(base) + at);
  }
  static float At(const void* base, int64_t at) { return static_cast<const float*>(base)[at]; }
};

struct Bf16Weights {
  KVD_AVX2 static __m256 Load(const void* base, int64_t at) {
    const __m128i bits = _mm_loadu_si128(
        reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + at));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  }
  static float At(const void* base, int64_t at) {
    uint16_t bits;
    std::memcpy(&bits, static_cast<const uint16_t*>(base) + at, sizeof(bits));
    return BF16ToFloat(bits);
  }
};

struct F16Weights {
  KVD_AVX2 static __m256 Load(const void* base, int64_t at) {
    return _mm256_cvtph_ps(_mm_loadu_si128(
        reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + at)));
  }
  static float At(const void* base, int64_t at) {
    uint16_t bits;
    std::memcpy(&bits, static_cast<const uint16_t*>(base) + at, sizeof(bits));
    return F16ToFloat(bits);
  }
};

KVD_AVX2 float HorizontalSum(__m256 v) {
  const __m128 pairs = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 halves = _mm_add_ps(pairs, _mm_movehl_ps(pairs, pairs));
  return _mm_cvtss_f32(_mm_add_ss(halves, _mm_movehdup_ps(halves)));
}

// Output features [o, o + kOuts) of rows [r, r + kRows).
template <class Weights, int kRows, int kOuts>
KVD_AVX2 void Tile(const MatmulArgs& a, int64_t r, int64_t o) {
  __m256 acc[kRows][kOuts];
#pragma GCC unroll 8
  for (int rr = 0; rr < kRows; ++rr) {
#pragma GCC unroll 8
    for (int k = 0; k < kOuts; ++k) acc[rr][k] = _mm256_setzero_ps();
  }
  const float* x = a.x + r * a.in;
  const int64_t vector_end = a.in / 8 * 8;
  for (int64_t i = 0; i < vector_end; i += 8) {
    __m256 w[kOuts];
#pragma GCC unroll 8
    for (int k = 0; k < kOuts; ++k) w[k] = Weights::Load(a.weight, (o + k) * a.in + i);
#pragma GCC unroll 8
    for (int rr = 0; rr < kRows; ++rr) {
      const __m256 xv = _mm256_loadu_ps(x + rr * a.in + i);
#pragma GCC unroll 8
      for (int k = 0; k < kOuts; ++k) acc[rr][k] = _mm256_fmadd_ps(w[k], xv, acc[rr][k]);
    }
  }
  for (int rr = 0; rr < kRows; ++rr) {
    for (int k = 0; k < kOuts; ++k) {
      float sum = HorizontalSum(acc[rr][k]);
      for (int64_t i = vector_end; i < a.in; ++i) {
        sum += x[rr * a.in + i] * Weights::At(a.weight, (o + k) * a.in + i);
      }
      a.out[(r + rr) * a.out_stride + o + k] = sum;
    }
  }
}

template <class Weights>
KVD_AVX2 void RunTiles(const MatmulArgs& a) {
  const int64_t end = a.first + a.count;
  const int64_t tiled_end = a.first + a.count / 4 * 4;
  // Output tiles outside, rows inside: a tile's weights (4 × in) stay in L1 across the rows.
  for (int64_t o = a.first; o < tiled_end; o += 4) {
    int64_t r = 0;
    for (; r + 2 <= a.rows; r += 2) Tile<Weights, 2, 4>(a, r, o);
    if (r < a.rows) Tile<Weights, 1, 4>(a, r, o);
  }
  for (int64_t o = tiled_end; o < end; ++o) {
    int64_t r = 0;
    for (; r + 2 <= a.rows; r += 2) Tile<Weights, 2, 1>(a, r, o);
    if (r < a.rows) Tile<Weights, 1, 1>(a, r, o);
  }
}

void Run(const MatmulArgs& a) {
  switch (a.dtype) {
    case DType::kF32:
      return RunTiles<F32Weights>(a);
    case DType::kBF16:
      return RunTiles<Bf16Weights>(a);
    case DType::kF16:
      return RunTiles<F16Weights>(a);
  }
}

}  // namespace

MatmulVariant Avx2Matmul() { return {"avx2", Run}; }

}  // namespace kvd::kernels::cpu
