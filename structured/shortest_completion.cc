#include "structured/shortest_completion.h"

#include <functional>
#include <queue>
#include <utility>

namespace kvd::structured {
namespace {

// One alternative of a rule while its shortest length is being found.
struct Alternative {
  int32_t rule = 0;
  int32_t start = 0;
  int32_t unresolved = 0;  // rule references whose rule's shortest length is not yet known
  int32_t known = 0;       // bytes, plus the known references' lengths
};

}  // namespace

std::vector<int32_t> ShortestSuffixLengths(const Grammar& grammar) {
  // Knuth's generalisation of Dijkstra's algorithm: a rule's shortest length is final once it is
  // the smallest among the alternatives whose references are all final.
  const int32_t rules = grammar.rule_count();
  std::vector<Alternative> alternatives;
  std::vector<std::vector<int32_t>> referenced_by(rules);  // rule → alternatives, per reference
  for (int32_t rule = 0; rule < rules; ++rule) {
    for (int32_t start : grammar.alternatives(rule)) {
      Alternative alternative{.rule = rule, .start = start};
      for (int32_t p = start; grammar.symbol(p).kind != Symbol::Kind::kEnd; ++p) {
        const Symbol& symbol = grammar.symbol(p);
        if (symbol.kind == Symbol::Kind::kBytes) {
          alternative.known = AddLengths(alternative.known, 1);
        } else {
          ++alternative.unresolved;
          referenced_by[symbol.index].push_back(static_cast<int32_t>(alternatives.size()));
        }
      }
      alternatives.push_back(alternative);
    }
  }
  using Candidate = std::pair<int32_t, int32_t>;  // (length, rule)
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> candidates;
  for (const Alternative& alternative : alternatives) {
    if (alternative.unresolved == 0) candidates.emplace(alternative.known, alternative.rule);
  }
  std::vector<int32_t> rule_length(rules, kUnboundedLength);
  std::vector<bool> final(rules, false);
  while (!candidates.empty()) {
    const auto [length, rule] = candidates.top();
    candidates.pop();
    if (final[rule]) continue;
    final[rule] = true;
    rule_length[rule] = length;
    for (int32_t index : referenced_by[rule]) {
      Alternative& alternative = alternatives[index];
      alternative.known = AddLengths(alternative.known, length);
      if (--alternative.unresolved == 0) {
        candidates.emplace(alternative.known, alternative.rule);
      }
    }
  }

  std::vector<int32_t> suffix(grammar.symbol_count(), 0);
  for (const Alternative& alternative : alternatives) {
    int32_t end = alternative.start;
    while (grammar.symbol(end).kind != Symbol::Kind::kEnd) ++end;
    for (int32_t p = end - 1; p >= alternative.start; --p) {
      const Symbol& symbol = grammar.symbol(p);
      const int32_t own = symbol.kind == Symbol::Kind::kBytes ? 1 : rule_length[symbol.index];
      suffix[p] = AddLengths(own, suffix[p + 1]);
    }
  }
  return suffix;
}

}  // namespace kvd::structured
