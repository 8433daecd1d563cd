#include "kernels/cpu/exp_sum.h"

#include <cmath>

namespace kvd::kernels::cpu {
namespace {

double RunScalar(const float* row, int64_t n, float max, float scale) {
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) sum += std::exp((double{row[j]} - max) * scale);
  return sum;
}

}  // namespace

ExpSumKernel ScalarExpSum() { return RunScalar; }

}  // namespace kvd::kernels::cpu
