// The fewest bytes that finish each part of a grammar: for every symbol position, the shortest
// text that matches the rest of its sequence from there. A matcher's stack sums these over its
// frames to know the shortest text that makes its output a whole sentence, which is how a
// constrained sequence keeps a sentence within its remaining token budget.
#pragma once

#include <cstdint>
#include <vector>

#include "structured/grammar.h"

namespace kvd::structured {

// Past this many bytes a length counts as unreachable (sums saturate here).
inline constexpr int32_t kUnboundedLength = 1 << 30;

// Saturating sum of two lengths.
inline int32_t AddLengths(int32_t a, int32_t b) {
  const int64_t sum = int64_t{a} + b;
  return sum >= kUnboundedLength ? kUnboundedLength : static_cast<int32_t>(sum);
}

// By symbol position (Grammar::symbol's index): the fewest bytes matching the symbols from that
// position to the end of its sequence (0 at a kEnd). A rule that no finite text matches counts
// as kUnboundedLength.
std::vector<int32_t> ShortestSuffixLengths(const Grammar& grammar);

}  // namespace kvd::structured
