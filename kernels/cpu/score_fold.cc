#include "kernels/cpu/score_fold.h"

#include <algorithm>

namespace kvd::kernels::cpu {
namespace {

void FoldScalar(const float* weights, int32_t entries, double total, ScoreReduce reduce,
                float* scores) {
  for (int32_t j = 0; j < entries; ++j) {
    const float p = static_cast<float>(weights[j] / total);
    scores[j] = reduce == ScoreReduce::kMax ? std::max(scores[j], p) : scores[j] + p;
  }
}

}  // namespace

ScoreFoldKernel ScalarScoreFold() { return FoldScalar; }

}  // namespace kvd::kernels::cpu
