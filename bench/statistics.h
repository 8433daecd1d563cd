// Small statistics the benchmarks share.
#pragma once

#include <algorithm>
#include <vector>

namespace kvd::bench {

// The middle value, or the mean of the two middle ones; `values` must not be empty.
inline double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace kvd::bench
