// What the AVX-512 attention kernels (attention_row_avx512.cc, attention_rows_avx512.cc) share:
// a pool element type's loads, the masks of a pass over a head's dimensions, and the value
// sum's step, one entry's value weighted into the sums of several query heads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/avx512_vectors.h"

namespace kvd::kernels::cpu::attention_avx512 {

// Loads of a pool of f32 (float) or bf16 (uint16_t) keys and values as floats.
template <class T>
using Elements = std::conditional_t<std::is_same_v<T, float>, F32Weights, Bf16Weights>;

// Masks of a pass of kVectors vectors of sixteen dimensions: all set, the last `last`.
template <int kVectors>
KVD_AVX512 inline __attribute__((always_inline)) void PassMasks(__mmask16 last,
                                                                __mmask16 (&masks)[kVectors]) {
#pragma GCC unroll 4
  for (int v = 0; v < kVectors; ++v) masks[v] = v + 1 < kVectors ? __mmask16{0xffff} : last;
}

// Asks for the pass's lines of the value at `value` (a line every 64 bytes from its start).
template <class T, int kVectors>
KVD_AVX512 inline __attribute__((always_inline)) void PrefetchPass(const T* value) {
  const char* bytes = reinterpret_cast<const char*>(value);
#pragma GCC unroll 4
  for (size_t line = 0; line < sizeof(T) * 16 * kVectors; line += 64) {
    _mm_prefetch(bytes + line, _MM_HINT_T0);
  }
}

// sums[i][v] += weights[i][e] · vector v of the pass's dimensions of `value`, for each of
// kWeights query heads: the value is loaded once for them.
template <class T, int kWeights, int kVectors>
KVD_AVX512 inline __attribute__((always_inline)) void AddWeightedValue(
    const T* value, const __mmask16 (&masks)[kVectors], const float* const (&weights)[kWeights],
    int32_t e, __m512 (&sums)[kWeights][kVectors]) {
  __m512 vectors[kVectors];
#pragma GCC unroll 4
  for (int v = 0; v < kVectors; ++v) {
    vectors[v] = Elements<T>::template Load<true>(value, 16 * v, masks[v]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < kWeights; ++i) {
    const __m512 w = _mm512_set1_ps(weights[i][e]);
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) sums[i][v] = _mm512_fmadd_ps(w, vectors[v], sums[i][v]);
  }
}

}  // namespace kvd::kernels::cpu::attention_avx512
