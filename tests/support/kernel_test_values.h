// The kernel tests' random inputs, drawn from the test's seeded generator, and the error measure
// their float outputs are held to.
#pragma once

#include <cstddef>
#include <random>
#include <span>
#include <vector>

namespace kvd::kernels {

// n values from a normal distribution with mean 0 and standard deviation `scale`.
std::vector<float> RandomNormals(std::mt19937& random, size_t n, float scale = 1.0f);

// ‖actual − expected‖ / ‖expected‖ (the absolute norm when expected is all zeros).
double RelativeError(std::span<const float> actual, std::span<const float> expected);

}  // namespace kvd::kernels
