#include "base/histogram.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace kvd::base {

Histogram::Histogram(std::vector<double> bounds) {
  KVD_CHECK(std::is_sorted(bounds.begin(), bounds.end()));
  data_.counts.assign(bounds.size() + 1, 0);
  data_.bounds = std::move(bounds);
}

void Histogram::Observe(double value) {
  const auto bucket = std::lower_bound(data_.bounds.begin(), data_.bounds.end(), value);
  ++data_.counts[static_cast<size_t>(bucket - data_.bounds.begin())];
  data_.sum += value;
  ++data_.count;
}

}  // namespace kvd::base
