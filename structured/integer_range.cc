#include "structured/integer_range.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/check.h"

namespace kvd::structured {
namespace {

// Sequences of digit sets matching the numbers from `low` to `high`, both of the same length.
void AppendDigitPatterns(const std::string& low, const std::string& high,
                         std::vector<std::vector<ByteSet>>& out,
                         std::vector<ByteSet> pattern = {}) {
  const size_t n = low.size();
  if (n == 0) {
    out.push_back(std::move(pattern));
    return;
  }
  const auto any = [](size_t count, std::vector<ByteSet> head) {
    for (size_t i = 0; i < count; ++i) head.push_back(ByteSet::Range('0', '9'));
    return head;
  };
  if (low == std::string(n, '0') && high == std::string(n, '9')) {
    out.push_back(any(n, std::move(pattern)));
    return;
  }
  std::vector<ByteSet> with_first = pattern;
  if (low[0] == high[0]) {
    with_first.push_back(ByteSet::Of(static_cast<uint8_t>(low[0])));
    AppendDigitPatterns(low.substr(1), high.substr(1), out, std::move(with_first));
    return;
  }
  with_first.push_back(ByteSet::Of(static_cast<uint8_t>(low[0])));
  AppendDigitPatterns(low.substr(1), std::string(n - 1, '9'), out, with_first);
  if (high[0] - low[0] > 1) {
    std::vector<ByteSet> middle = pattern;
    middle.push_back(ByteSet::Range(static_cast<uint8_t>(low[0] + 1),
                                    static_cast<uint8_t>(high[0] - 1)));
    out.push_back(any(n - 1, std::move(middle)));
  }
  std::vector<ByteSet> with_last = std::move(pattern);
  with_last.push_back(ByteSet::Of(static_cast<uint8_t>(high[0])));
  AppendDigitPatterns(std::string(n - 1, '0'), high.substr(1), out, std::move(with_last));
}

// Patterns for the non-negative integers in [low, high].
std::vector<std::vector<ByteSet>> NonNegativePatterns(int64_t low, int64_t high) {
  std::vector<std::vector<ByteSet>> out;
  int64_t length_start = 0;  // the smallest number of the current length
  for (int length = 1; length <= 16 && length_start <= high; ++length) {
    const int64_t length_end = length_start == 0 ? 9 : length_start * 10 - 1;
    const int64_t from = std::max(low, length_start);
    const int64_t to = std::min(high, length_end);
    if (from <= to) {
      AppendDigitPatterns(std::to_string(from), std::to_string(to), out);
    }
    length_start = length_start == 0 ? 10 : length_start * 10;
  }
  return out;
}

}  // namespace

int32_t AddIntegerRangeRule(GrammarBuilder& builder, int64_t low, int64_t high) {
  KVD_CHECK(-kMaxIntegerMagnitude <= low && low <= high && high <= kMaxIntegerMagnitude);
  const int32_t rule = builder.AddRule("integer_range");
  const auto add = [&](const std::vector<ByteSet>& pattern, bool negative) {
    std::vector<Symbol> sequence;
    if (negative) sequence.push_back(builder.Bytes(ByteSet::Of('-')));
    for (const ByteSet& digits : pattern) sequence.push_back(builder.Bytes(digits));
    builder.AddAlternative(rule, sequence);
  };
  if (low < 0) {
    // -1 down to low: "-" and the magnitudes from max(1, -high) to -low.
    for (const auto& pattern : NonNegativePatterns(std::max<int64_t>(1, -high), -low)) {
      add(pattern, true);
    }
  }
  if (high >= 0) {
    for (const auto& pattern : NonNegativePatterns(std::max<int64_t>(0, low), high)) {
      add(pattern, false);
    }
  }
  return rule;
}

}  // namespace kvd::structured
