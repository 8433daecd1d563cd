// A Prometheus-style histogram: fixed bucket bounds, per-bucket counts, sum and count. Not
// synchronised; its owner guards it.
#pragma once

#include <cstdint>
#include <vector>

namespace kvd::base {

struct HistogramSnapshot {
  std::vector<double> bounds;    // upper bounds of the finite buckets, increasing
  std::vector<uint64_t> counts;  // per bucket, not cumulative; one more than bounds (+Inf)
  double sum = 0.0;
  uint64_t count = 0;
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  const HistogramSnapshot& snapshot() const { return data_; }

 private:
  HistogramSnapshot data_;
};

}  // namespace kvd::base
