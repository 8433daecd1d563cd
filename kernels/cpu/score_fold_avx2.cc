// The AVX2 score fold (score_fold.h): four f32 weights widened to double, divided by the total,
// rounded back to f32 and folded, bit for bit as the scalar loop does it. Compiled for AVX2
// function by function.
#include <immintrin.h>

#include "kernels/cpu/isa_targets.h"
#include "kernels/cpu/score_fold.h"

namespace kvd::kernels::cpu {
namespace {

template <ScoreReduce kReduce>
KVD_AVX2 void FoldOn(const float* weights, int32_t entries, double total, float* scores) {
  const __m256d divisor = _mm256_set1_pd(total);
  int32_t j = 0;
  for (; j + 4 <= entries; j += 4) {
    const __m256d wide = _mm256_cvtps_pd(_mm_loadu_ps(weights + j));
    const __m128 p = _mm256_cvtpd_ps(_mm256_div_pd(wide, divisor));
    const __m128 score = _mm_loadu_ps(scores + j);
    // max(p, score) keeps `score` when they are equal, as std::max(score, p) does.
    _mm_storeu_ps(scores + j,
                  kReduce == ScoreReduce::kMax ? _mm_max_ps(p, score) : _mm_add_ps(score, p));
  }
  for (; j < entries; ++j) {
    const float p = static_cast<float>(weights[j] / total);
    scores[j] = kReduce == ScoreReduce::kMax ? (scores[j] < p ? p : scores[j]) : scores[j] + p;
  }
}

void Fold(const float* weights, int32_t entries, double total, ScoreReduce reduce, float* scores) {
  if (reduce == ScoreReduce::kMax) {
    FoldOn<ScoreReduce::kMax>(weights, entries, total, scores);
  } else {
    FoldOn<ScoreReduce::kSum>(weights, entries, total, scores);
  }
}

}  // namespace

ScoreFoldKernel Avx2ScoreFold() { return Fold; }

}  // namespace kvd::kernels::cpu
