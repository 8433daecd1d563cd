// Folds one query head's attention probabilities of a row into the per-entry scores KVzip and
// KeepKV collect: p[j] = weights[j] / total, rounded to f32, then max or sum into scores[j].
// One kernel per instruction set; every one gives the scalar reference's bits, since a score
// tie decides which entries a cut keeps (tests/unit/kernels/score_fold_test.cc).
#pragma once

#include <cstdint>

#include "kernels/kv_layout.h"

namespace kvd::kernels::cpu {

// `weights`: [entries] exp(logit - max), `total` their sum over the row (attention_row.h).
using ScoreFoldKernel = void (*)(const float* weights, int32_t entries, double total,
                                 ScoreReduce reduce, float* scores);

ScoreFoldKernel ScalarScoreFold();
// AVX2: four divisions in double at a time, each correctly rounded as the scalar one is.
ScoreFoldKernel Avx2ScoreFold();

}  // namespace kvd::kernels::cpu
