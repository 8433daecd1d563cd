#include "engine/mass_selection.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "base/check.h"

namespace kvd::engine {
namespace {

// Ranges this small are sorted and walked.
constexpr size_t kSortedRange = 32;

}  // namespace

size_t SelectByMass(std::span<Candidate> candidates, double target, bool inclusive) {
  KVD_CHECK(!candidates.empty());
  const auto passed = [inclusive](double rest) { return inclusive ? rest <= 0.0 : rest < 0.0; };
  // Everything before `lo` is more likely than everything in [lo, hi), and everything from
  // `hi` on less likely; the walk has passed [0, lo) with `target` left.
  size_t lo = 0, hi = candidates.size();
  // Past this many partitions (an order no median of three splits well), sort what is left.
  int32_t partitions_left = 2 * std::bit_width(candidates.size()) + 8;
  while (hi - lo > kSortedRange && partitions_left-- > 0) {
    Candidate* const first = candidates.data() + lo;
    Candidate* const last = candidates.data() + hi - 1;
    Candidate* const middle = candidates.data() + lo + (hi - lo) / 2;
    // The median of three goes first, as the pivot.
    if (MoreLikely(*middle, *first)) std::swap(*middle, *first);
    if (MoreLikely(*last, *first)) std::swap(*last, *first);
    if (MoreLikely(*last, *middle)) std::swap(*last, *middle);
    std::swap(*first, *middle);  // first: the median; middle: the most likely of the three
    const Candidate pivot = *first;
    Candidate* const split = std::partition(
        first + 1, last + 1, [&pivot](const Candidate& c) { return MoreLikely(c, pivot); });
    // [lo, p) more likely than the pivot, p the pivot, (p, hi) less likely.
    const size_t p = static_cast<size_t>(split - candidates.data()) - 1;
    std::swap(candidates[lo], candidates[p]);
    double more_likely = 0.0;
    for (size_t i = lo; i < p; ++i) more_likely += candidates[i].probability;
    if (passed(target - more_likely)) {
      hi = p;
      continue;
    }
    target -= more_likely + candidates[p].probability;
    if (passed(target)) return p;
    lo = p + 1;
  }
  // A median of three leaves a candidate on each side of the pivot: the range is never empty.
  KVD_CHECK(lo < hi);
  std::sort(candidates.begin() + lo, candidates.begin() + hi, MoreLikely);
  for (size_t i = lo; i < hi; ++i) {
    target -= candidates[i].probability;
    if (passed(target)) return i;
  }
  return hi - 1;
}

}  // namespace kvd::engine
