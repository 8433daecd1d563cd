#include "kernels/cpu/first_above.h"

namespace kvd::kernels::cpu {
namespace {

int64_t RunScalar(const float* values, int64_t begin, int64_t end, float threshold) {
  for (int64_t j = begin; j < end; ++j) {
    if (values[j] > threshold) return j;
  }
  return end;
}

}  // namespace

FirstAboveKernel ScalarFirstAbove() { return RunScalar; }

}  // namespace kvd::kernels::cpu
