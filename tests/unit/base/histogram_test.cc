#include "base/histogram.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvd::base {
namespace {

TEST(HistogramTest, BucketsAreUpperBoundsInclusive) {
  Histogram histogram({1.0, 2.0});
  for (double value : {0.5, 1.0, 1.5, 2.0, 7.0}) histogram.Observe(value);
  const HistogramSnapshot& data = histogram.snapshot();
  EXPECT_EQ(data.counts, (std::vector<uint64_t>{2, 2, 1}));
  EXPECT_EQ(data.count, 5u);
  EXPECT_DOUBLE_EQ(data.sum, 12.0);
}

TEST(HistogramDeathTest, UnsortedBoundsAreABug) {
  EXPECT_DEATH(Histogram({2.0, 1.0}), "check failed");
}

}  // namespace
}  // namespace kvd::base
