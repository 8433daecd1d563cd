// The AVX2 attention row (attention_row.h), in f32 over f32 or bf16 keys and values (a bf16
// element widens to f32 by a shift):
// - logits eight entries at a time: eight dot products accumulate side by side and one
//   transpose-add sums them, instead of a horizontal sum per entry and head;
// - softmax weights by a vector exp (vector_exp_avx2.h);
// - the weighted value sum over blocks of entries that stay in L1, with up to four heads'
//   accumulators in registers, so each value is loaded once per block for the whole group.
// Compiled for AVX2 function by function.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/attention_row.h"
#include "kernels/cpu/vector_exp_avx2.h"

#define KVD_AVX2 __attribute__((target("avx2,fma")))

namespace kvd::kernels::cpu {
namespace {

// Entries whose values one pass of the value sum keeps in L1 (32 × 256 dims × 4 B = 32 KiB at
// the largest head).
constexpr int32_t kValueBlock = 32;
// How far ahead of the entries whose logits it computes the logit loop prefetches keys.
constexpr int32_t kKeysAhead = 32;

KVD_AVX2 float HorizontalSum(__m256 v) {
  const __m128 pairs = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 halves = _mm_add_ps(pairs, _mm_movehl_ps(pairs, pairs));
  return _mm_cvtss_f32(_mm_add_ss(halves, _mm_movehdup_ps(halves)));
}

KVD_AVX2 float HorizontalMax(__m256 v) {
  const __m128 pairs = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 halves = _mm_max_ps(pairs, _mm_movehl_ps(pairs, pairs));
  return _mm_cvtss_f32(_mm_max_ss(halves, _mm_movehdup_ps(halves)));
}

// Lane e of the result is the sum of the lanes of a[e].
KVD_AVX2 __m256 TransposeSum(const __m256 (&a)[8]) {
  const __m256 t0 = _mm256_hadd_ps(a[0], a[1]);
  const __m256 t1 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 t2 = _mm256_hadd_ps(a[4], a[5]);
  const __m256 t3 = _mm256_hadd_ps(a[6], a[7]);
  const __m256 low_entries = _mm256_hadd_ps(t0, t1);   // entries 0-3, each half of the lanes
  const __m256 high_entries = _mm256_hadd_ps(t2, t3);  // entries 4-7
  return _mm256_add_ps(_mm256_permute2f128_ps(low_entries, high_entries, 0x20),
                       _mm256_permute2f128_ps(low_entries, high_entries, 0x31));
}

KVD_AVX2 __m256 Load8(const float* p) { return _mm256_loadu_ps(p); }
KVD_AVX2 __m256 Load8(const uint16_t* p) {
  const __m256i widened =
      _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(widened, 16));
}
float ToFloat(float x) { return x; }
float ToFloat(uint16_t bf16) { return BF16ToFloat(bf16); }

// One row's view of the pool, whose keys and values are of type T (float, or uint16_t for bf16).
template <class T>
struct Row {
  const AttentionRow& a;
  const T* keys = static_cast<const T*>(a.pool->keys);
  const T* values = static_cast<const T*>(a.pool->values);
  const T* Key(int32_t j) const { return keys + a.slots[j] * a.head_dim; }
  const T* Value(int32_t j) const { return values + a.slots[j] * a.head_dim; }
  float* Weights(int32_t g) const { return a.weights + static_cast<int64_t>(g) * a.entries; }
};

// Asks for every cache line of the keys or values (`vectors`) of entries [begin, end) ahead of
// their use: an entry's blocks lie anywhere in the pool, so the hardware's stream prefetch
// loses the stream at every block.
template <class T>
KVD_AVX2 void Prefetch(const T* vectors, const AttentionRow& a, int32_t begin, int32_t end) {
  for (int32_t j = begin; j < end; ++j) {
    const char* vector = reinterpret_cast<const char*>(vectors + a.slots[j] * a.head_dim);
    for (size_t line = 0; line < sizeof(T) * a.head_dim; line += 64) {
      _mm_prefetch(vector + line, _MM_HINT_T0);
    }
  }
}

// weights[g][j] = q_g · k_j · scale + log_vote_j for every head g and entry j.
template <class T>
KVD_AVX2 void Logits(const Row<T>& row) {
  const AttentionRow& a = row.a;
  const int32_t vector_dims = a.head_dim / 8 * 8;
  const __m256 scale = _mm256_set1_ps(a.scale);
  int32_t j = 0;
  for (; j + 8 <= a.entries; j += 8) {
    const T* keys[8];
    alignas(32) float log_votes[8];
    for (int32_t e = 0; e < 8; ++e) {
      keys[e] = row.Key(j + e);
      log_votes[e] = a.pool->log_votes[a.slots[j + e]];
    }
    if (j + kKeysAhead < a.entries) {
      Prefetch(row.keys, a, j + kKeysAhead, std::min(a.entries, j + kKeysAhead + 8));
      _mm_prefetch(reinterpret_cast<const char*>(a.pool->log_votes + a.slots[j + kKeysAhead]),
                   _MM_HINT_T0);
    }
    for (int32_t g = 0; g < a.group; ++g) {
      const float* query = a.queries + static_cast<int64_t>(g) * a.head_dim;
      __m256 sums[8];
#pragma GCC unroll 8
      for (__m256& s : sums) s = _mm256_setzero_ps();
      for (int32_t d = 0; d < vector_dims; d += 8) {
        const __m256 q = _mm256_loadu_ps(query + d);
#pragma GCC unroll 8
        for (int32_t e = 0; e < 8; ++e) {
          sums[e] = _mm256_fmadd_ps(q, Load8(keys[e] + d), sums[e]);
        }
      }
      __m256 dots = TransposeSum(sums);
      if (vector_dims < a.head_dim) {
        alignas(32) float tails[8];
        for (int32_t e = 0; e < 8; ++e) {
          float tail = 0.0f;
          for (int32_t d = vector_dims; d < a.head_dim; ++d) {
            tail += query[d] * ToFloat(keys[e][d]);
          }
          tails[e] = tail;
        }
        dots = _mm256_add_ps(dots, _mm256_load_ps(tails));
      }
      _mm256_storeu_ps(row.Weights(g) + j, _mm256_fmadd_ps(dots, scale, _mm256_load_ps(log_votes)));
    }
  }
  for (; j < a.entries; ++j) {
    const T* key = row.Key(j);
    const float log_vote = a.pool->log_votes[a.slots[j]];
    for (int32_t g = 0; g < a.group; ++g) {
      const float* query = a.queries + static_cast<int64_t>(g) * a.head_dim;
      __m256 sum = _mm256_setzero_ps();
      for (int32_t d = 0; d < vector_dims; d += 8) {
        sum = _mm256_fmadd_ps(_mm256_loadu_ps(query + d), Load8(key + d), sum);
      }
      float dot = HorizontalSum(sum);
      for (int32_t d = vector_dims; d < a.head_dim; ++d) dot += query[d] * ToFloat(key[d]);
      row.Weights(g)[j] = dot * a.scale + log_vote;
    }
  }
}

// Turns head g's logits into exp(logit − max) in place; returns their sum.
KVD_AVX2 double Softmax(float* weights, int32_t entries) {
  __m256 max8 = _mm256_set1_ps(-INFINITY);
  int32_t j = 0;
  for (; j + 8 <= entries; j += 8) max8 = _mm256_max_ps(max8, _mm256_loadu_ps(weights + j));
  float max_logit = HorizontalMax(max8);
  for (; j < entries; ++j) max_logit = std::max(max_logit, weights[j]);
  const __m256 max_vector = _mm256_set1_ps(max_logit);
  __m256 sum8 = _mm256_setzero_ps();
  j = 0;
  for (; j + 8 <= entries; j += 8) {
    const __m256 w = ExpOfNonPositive(_mm256_sub_ps(_mm256_loadu_ps(weights + j), max_vector));
    _mm256_storeu_ps(weights + j, w);
    sum8 = _mm256_add_ps(sum8, w);
  }
  double total = HorizontalSum(sum8);
  for (; j < entries; ++j) {
    weights[j] = std::exp(weights[j] - max_logit);
    total += weights[j];
  }
  return total;
}

// out[g][d] += Σ_j weights[g][j] · value_j[d] over entries [begin, end), for kHeads heads from
// `first_head` and kVectors × 8 dimensions from `dim`.
template <class T, int kHeads, int kVectors>
KVD_AVX2 void AccumulateValues(const Row<T>& row, int32_t first_head, int32_t dim, int32_t begin,
                               int32_t end) {
  const AttentionRow& a = row.a;
  const T* const values = row.values + dim;
  const int64_t* const slots = a.slots;
  const int64_t head_dim = a.head_dim;
  const float* weights[kHeads];
  float* out[kHeads];
  __m256 sums[kHeads][kVectors];
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h) {
    weights[h] = row.Weights(first_head + h);
    out[h] = a.out + (first_head + h) * head_dim + dim;
#pragma GCC unroll 8
    for (int v = 0; v < kVectors; ++v) sums[h][v] = _mm256_loadu_ps(out[h] + 8 * v);
  }
  // Each pass over the block asks for its dimensions of the next block's values: a line every
  // 64 bytes from where it starts (asking once for a pass of fewer bytes, measured faster than
  // computing which lines the passes share).
  constexpr size_t kPassBytes = sizeof(T) * 8 * kVectors;
  const int32_t prefetch_end = std::min(end, a.entries - kValueBlock);
  for (int32_t j = begin; j < end; ++j) {
    const T* value = values + slots[j] * head_dim;
    if (j < prefetch_end) {
      const char* ahead = reinterpret_cast<const char*>(values + slots[j + kValueBlock] * head_dim);
#pragma GCC unroll 4
      for (size_t line = 0; line < kPassBytes; line += 64) _mm_prefetch(ahead + line, _MM_HINT_T0);
    }
    __m256 value_vectors[kVectors];
#pragma GCC unroll 8
    for (int v = 0; v < kVectors; ++v) value_vectors[v] = Load8(value + 8 * v);
#pragma GCC unroll 8
    for (int h = 0; h < kHeads; ++h) {
      const __m256 w = _mm256_broadcast_ss(weights[h] + j);
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v) {
        sums[h][v] = _mm256_fmadd_ps(w, value_vectors[v], sums[h][v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h) {
#pragma GCC unroll 8
    for (int v = 0; v < kVectors; ++v) _mm256_storeu_ps(out[h] + 8 * v, sums[h][v]);
  }
}

// Every dimension of kHeads heads from `first_head` over entries [begin, end): eight
// accumulators at a time, then the dimensions past the last multiple of 8 one by one.
template <class T, int kHeads>
KVD_AVX2 void AccumulateHeads(const Row<T>& row, int32_t first_head, int32_t begin, int32_t end) {
  constexpr int kVectors = 8 / kHeads;
  const int32_t head_dim = row.a.head_dim;
  int32_t d = 0;
  for (; d + 8 * kVectors <= head_dim; d += 8 * kVectors) {
    AccumulateValues<T, kHeads, kVectors>(row, first_head, d, begin, end);
  }
  for (; d + 8 <= head_dim; d += 8) AccumulateValues<T, kHeads, 1>(row, first_head, d, begin, end);
  for (; d < head_dim; ++d) {
    for (int h = 0; h < kHeads; ++h) {
      const float* weights = row.Weights(first_head + h);
      float sum = 0.0f;
      for (int32_t j = begin; j < end; ++j) sum += weights[j] * ToFloat(row.Value(j)[d]);
      row.a.out[int64_t{first_head + h} * head_dim + d] += sum;
    }
  }
}

template <class T>
KVD_AVX2 void RunOn(const AttentionRow& a) {
  const Row<T> row{a};
  Logits(row);
  for (int32_t g = 0; g < a.group; ++g) a.totals[g] = Softmax(row.Weights(g), a.entries);
  std::fill(a.out, a.out + static_cast<int64_t>(a.group) * a.head_dim, 0.0f);
  for (int32_t begin = 0; begin < a.entries; begin += kValueBlock) {
    const int32_t end = std::min(a.entries, begin + kValueBlock);
    int32_t g = 0;
    for (; g + 4 <= a.group; g += 4) AccumulateHeads<T, 4>(row, g, begin, end);
    for (; g + 2 <= a.group; g += 2) AccumulateHeads<T, 2>(row, g, begin, end);
    for (; g < a.group; ++g) AccumulateHeads<T, 1>(row, g, begin, end);
  }
  for (int32_t g = 0; g < a.group; ++g) {
    const __m256 inverse = _mm256_set1_ps(static_cast<float>(1.0 / a.totals[g]));
    float* out = a.out + static_cast<int64_t>(g) * a.head_dim;
    int32_t d = 0;
    for (; d + 8 <= a.head_dim; d += 8) {
      _mm256_storeu_ps(out + d, _mm256_mul_ps(inverse, _mm256_loadu_ps(out + d)));
    }
    for (; d < a.head_dim; ++d) out[d] *= static_cast<float>(1.0 / a.totals[g]);
  }
}

void Run(const AttentionRow& a) {
  if (a.pool->dtype == DType::kBF16) {
    RunOn<uint16_t>(a);
  } else {
    RunOn<float>(a);
  }
}

}  // namespace

AttentionRowKernel Avx2AttentionRow() { return Run; }

}  // namespace kvd::kernels::cpu
