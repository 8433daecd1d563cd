#include "scheduler/internal/ngram_drafter.h"

#include <algorithm>

namespace kvd::scheduler::internal {
namespace {

// The shortest match looked up in the sequence's own tokens: one repeated token predicts little
// there, while in the document it continues it is where a copy resumes.
constexpr int32_t kMinOwnN = 2;

bool MatchesAt(std::span<const int32_t> text, size_t start, std::span<const int32_t> pattern) {
  return std::equal(pattern.begin(), pattern.end(), text.begin() + static_cast<ptrdiff_t>(start));
}

std::vector<int32_t> Following(std::span<const int32_t> text, size_t from, int32_t max_tokens) {
  const size_t end = std::min(text.size(), from + static_cast<size_t>(max_tokens));
  return {text.begin() + static_cast<ptrdiff_t>(from), text.begin() + static_cast<ptrdiff_t>(end)};
}

}  // namespace

std::vector<int32_t> ProposeNgramDraft(std::span<const int32_t> context,
                                       std::span<const int32_t> document, const NgramLookup& lookup,
                                       int32_t max_tokens) {
  if (max_tokens <= 0 || lookup.min_n < 1) return {};
  for (int32_t n = std::min<int32_t>(lookup.max_n, static_cast<int32_t>(context.size()));
       n >= lookup.min_n; --n) {
    const size_t length = static_cast<size_t>(n);
    const std::span<const int32_t> pattern = context.last(length);
    // The latest occurrence that ends before the pattern itself, so something follows it.
    for (size_t start = n >= kMinOwnN ? context.size() - length : 0; start-- > 0;) {
      if (MatchesAt(context, start, pattern)) return Following(context, start + length, max_tokens);
    }
    // The first occurrence in the document with at least one token after it.
    for (size_t start = 0; start + length < document.size(); ++start) {
      if (MatchesAt(document, start, pattern)) {
        return Following(document, start + length, max_tokens);
      }
    }
  }
  return {};
}

}  // namespace kvd::scheduler::internal
