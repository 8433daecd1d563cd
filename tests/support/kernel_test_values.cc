// The kernel tests' random inputs and error measure.
#include "tests/support/kernel_test_values.h"

#include <cmath>

namespace kvd::kernels {

std::vector<float> RandomNormals(std::mt19937& random, size_t n, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(n);
  for (float& x : values) x = normal(random);
  return values;
}

double RelativeError(std::span<const float> actual, std::span<const float> expected) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff += (double{actual[i]} - expected[i]) * (double{actual[i]} - expected[i]);
    norm += double{expected[i]} * expected[i];
  }
  return norm == 0.0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

}  // namespace kvd::kernels
