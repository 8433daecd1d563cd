// The AVX2 attention row (attention_row.h), in f32 over f32 or bf16 keys and values (a bf16
// element widens to f32 by a shift):
// - logits eight entries at a time: eight dot products accumulate side by side and one
//   transpose-add sums them, instead of a horizontal sum per entry and head;
// - the weighted value sum over blocks of entries that stay in L1, with up to four heads'
//   accumulators in registers, so each value is loaded once per block for the whole group;
// - the softmax and the order of the steps are attention_row_steps.h's.
// Compiled for AVX2 function by function.
#include <algorithm>

#include "kernels/cpu/attention_row.h"
#include "kernels/cpu/attention_row_steps.h"
#include "kernels/cpu/isa_targets.h"

namespace kvd::kernels::cpu {
namespace {

using attention_steps::HorizontalSum;
using attention_steps::kValueBlock;
using attention_steps::Row;
using attention_steps::ToFloat;

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

// weights[g][j] = q_g · k_j · scale + log_vote_j for every head g and entry j.
template <class T>
KVD_AVX2 void WriteLogits(const Row<T>& row) {
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
    attention_steps::PrefetchKeysAhead(row, j, 8);
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

// The AVX2 steps of attention_steps::Run.
struct Avx2Steps {
  template <class T>
  KVD_AVX2 static void Logits(const Row<T>& row) {
    WriteLogits(row);
  }
  template <class T, int kHeads>
  KVD_AVX2 static void AccumulateHeads(const Row<T>& row, int32_t first_head, int32_t begin,
                                       int32_t end) {
    cpu::AccumulateHeads<T, kHeads>(row, first_head, begin, end);
  }
};

}  // namespace

AttentionRowKernel Avx2AttentionRow() { return attention_steps::RunOnPool<Avx2Steps>; }

}  // namespace kvd::kernels::cpu
