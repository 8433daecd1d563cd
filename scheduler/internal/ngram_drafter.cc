#include "scheduler/internal/ngram_drafter.h"

#include <algorithm>
#include <utility>

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

uint64_t HashOf(std::span<const int32_t> tokens) {
  uint64_t hash = 0x9E3779B97F4A7C15ull;
  for (int32_t token : tokens) {
    hash ^= static_cast<uint32_t>(token);
    hash *= 0xBF58476D1CE4E5B9ull;
    hash ^= hash >> 31;
  }
  return hash;
}

}  // namespace

DocumentNgrams::DocumentNgrams(std::span<const int32_t> tokens, const NgramLookup& lookup)
    : tokens_(tokens.begin(), tokens.end()), lookup_(lookup) {
  const std::span<const int32_t> text = tokens_;
  for (int32_t n = lookup.min_n; n <= lookup.max_n; ++n) {
    std::unordered_map<uint64_t, uint32_t>& first = first_.emplace_back();
    const size_t length = static_cast<size_t>(n);
    for (size_t start = 0; start + length < text.size(); ++start) {
      first.try_emplace(HashOf(text.subspan(start, length)), static_cast<uint32_t>(start));
    }
  }
}

std::optional<size_t> DocumentNgrams::First(std::span<const int32_t> pattern) const {
  const int32_t n = static_cast<int32_t>(pattern.size());
  if (n < lookup_.min_n || n > lookup_.max_n) return std::nullopt;
  const auto& first = first_[static_cast<size_t>(n - lookup_.min_n)];
  const auto it = first.find(HashOf(pattern));
  // A hash that collides with another n-gram's is no match: a draft is only a guess anyway.
  if (it == first.end() || !MatchesAt(tokens(), it->second, pattern)) return std::nullopt;
  return it->second;
}

std::vector<int32_t> ProposeNgramDraft(std::span<const int32_t> context,
                                       const DocumentNgrams* document, const NgramLookup& lookup,
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
    if (document == nullptr) continue;
    if (const std::optional<size_t> start = document->First(pattern)) {
      return Following(document->tokens(), *start + length, max_tokens);
    }
  }
  return {};
}

}  // namespace kvd::scheduler::internal
