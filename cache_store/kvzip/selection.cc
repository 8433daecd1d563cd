#include "cache_store/kvzip/selection.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace kvd::cache_store {
namespace {

// How many entries head i keeps when `keep` is spread evenly over `heads`.
int64_t ShareOf(int64_t keep, size_t heads, size_t i) {
  const int64_t n = static_cast<int64_t>(heads);
  return keep / n + (static_cast<int64_t>(i) < keep % n ? 1 : 0);
}

// kvzip_heads: one in this many kept entries goes to the heads' recent windows. Measured on the
// bundled model (docs/benchmarks.md): a quarter or a half starves the important heads at small
// ratios, none leaves the others without local context.
constexpr int64_t kRecentWindowShare = 8;

// The `count` highest-scoring positions among `candidates`, ascending; ties to earlier ones.
std::vector<int32_t> TopPositions(const std::vector<float>& scores, std::vector<int32_t> candidates,
                                  int64_t count) {
  count = std::min<int64_t>(count, static_cast<int64_t>(candidates.size()));
  auto better = [&](int32_t a, int32_t b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
  };
  std::nth_element(candidates.begin(), candidates.begin() + count, candidates.end(), better);
  candidates.resize(count);
  std::sort(candidates.begin(), candidates.end());
  return candidates;
}

std::vector<int32_t> AllPositions(size_t length) {
  std::vector<int32_t> positions(length);
  std::iota(positions.begin(), positions.end(), 0);
  return positions;
}

}  // namespace

HeadSelection SelectJointTop(const HeadScores& scores, int64_t keep) {
  struct Entry {
    float score;
    int32_t head;
    int32_t position;
  };
  std::vector<Entry> entries;
  for (size_t h = 0; h < scores.size(); ++h) {
    for (size_t p = 0; p < scores[h].size(); ++p) {
      entries.push_back({scores[h][p], static_cast<int32_t>(h), static_cast<int32_t>(p)});
    }
  }
  keep = std::clamp<int64_t>(keep, 0, static_cast<int64_t>(entries.size()));
  std::nth_element(entries.begin(), entries.begin() + keep, entries.end(),
                   [](const Entry& a, const Entry& b) {
                     if (a.score != b.score) return a.score > b.score;
                     return a.head != b.head ? a.head < b.head : a.position < b.position;
                   });
  HeadSelection kept(scores.size());
  for (int64_t i = 0; i < keep; ++i) kept[entries[i].head].push_back(entries[i].position);
  for (auto& positions : kept) std::sort(positions.begin(), positions.end());
  return kept;
}

HeadSelection SelectPerHeadTop(const HeadScores& scores, int64_t keep) {
  HeadSelection kept(scores.size());
  for (size_t h = 0; h < scores.size(); ++h) {
    kept[h] =
        TopPositions(scores[h], AllPositions(scores[h].size()), ShareOf(keep, scores.size(), h));
  }
  return kept;
}

HeadSelection SelectHeavyAndRecent(const HeadScores& scores, int64_t keep) {
  HeadSelection kept(scores.size());
  for (size_t h = 0; h < scores.size(); ++h) {
    const int32_t length = static_cast<int32_t>(scores[h].size());
    const int64_t share = std::min<int64_t>(ShareOf(keep, scores.size(), h), length);
    const int32_t recent = static_cast<int32_t>(share / 2);
    std::vector<int32_t> older(length - recent);
    std::iota(older.begin(), older.end(), 0);
    kept[h] = TopPositions(scores[h], std::move(older), share - recent);
    for (int32_t p = length - recent; p < length; ++p) kept[h].push_back(p);
  }
  return kept;
}

HeadSelection SelectRecent(const HeadScores& scores, int64_t keep) {
  HeadSelection kept(scores.size());
  for (size_t h = 0; h < scores.size(); ++h) {
    const int32_t length = static_cast<int32_t>(scores[h].size());
    const int64_t share = std::min<int64_t>(ShareOf(keep, scores.size(), h), length);
    for (int32_t p = static_cast<int32_t>(length - share); p < length; ++p) kept[h].push_back(p);
  }
  return kept;
}

HeadSelection SelectByHeadImportance(const HeadScores& scores, int64_t keep) {
  constexpr float kNotHeld = -std::numeric_limits<float>::infinity();
  std::vector<float> importance(scores.size(), kNotHeld);
  std::vector<std::vector<int32_t>> held(scores.size());
  for (size_t h = 0; h < scores.size(); ++h) {
    for (size_t p = 0; p < scores[h].size(); ++p) {
      if (scores[h][p] == kNotHeld) continue;
      held[h].push_back(static_cast<int32_t>(p));
      importance[h] = std::max(importance[h], scores[h][p]);
    }
  }
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return importance[a] > importance[b]; });
  keep = std::max<int64_t>(keep, 0);
  // Every head's recent window first, then the rest by importance.
  const int64_t windows = keep / kRecentWindowShare;
  std::vector<int64_t> counts(scores.size(), 0);
  for (size_t h = 0; h < scores.size(); ++h) {
    counts[h] =
        std::min<int64_t>(ShareOf(windows, scores.size(), h), static_cast<int64_t>(held[h].size()));
  }
  int64_t left = keep;
  for (int64_t count : counts) left -= count;
  for (size_t h : order) {
    const int64_t more = std::min<int64_t>(left, static_cast<int64_t>(held[h].size()) - counts[h]);
    counts[h] += more;
    left -= more;
  }
  HeadSelection kept(scores.size());
  for (size_t h = 0; h < scores.size(); ++h) {
    kept[h].assign(held[h].end() - counts[h], held[h].end());
  }
  return kept;
}

std::vector<float> MaxPool(const std::vector<float>& scores, int32_t kernel) {
  const int32_t n = static_cast<int32_t>(scores.size());
  const int32_t half = kernel / 2;
  std::vector<float> pooled(scores.size());
  for (int32_t i = 0; i < n; ++i) {
    const int32_t begin = std::max(0, i - half);
    const int32_t end = std::min(n, i + half + 1);
    pooled[i] = *std::max_element(scores.begin() + begin, scores.begin() + end);
  }
  return pooled;
}

HeadSelection SelectEntries(CompressionMethod method, const HeadScores& scores, int64_t keep) {
  switch (method) {
    case CompressionMethod::kKvzip:
      return SelectJointTop(scores, keep);
    case CompressionMethod::kKvzipHeads:
      return SelectByHeadImportance(scores, keep);
    case CompressionMethod::kSnapKv: {
      constexpr int32_t kPoolKernel = 7;
      HeadScores pooled;
      for (const auto& head : scores) pooled.push_back(MaxPool(head, kPoolKernel));
      return SelectPerHeadTop(pooled, keep);
    }
    case CompressionMethod::kH2O:
      return SelectHeavyAndRecent(scores, keep);
    case CompressionMethod::kStreaming:
      return SelectRecent(scores, keep);
    case CompressionMethod::kNone:
      break;
  }
  HeadSelection all;
  for (const auto& head : scores) all.push_back(AllPositions(head.size()));
  return all;
}

}  // namespace kvd::cache_store
