// What a grammar decides about a whole text, run byte by byte through a fresh StackSpace.
#pragma once

#include <string_view>
#include <vector>

#include "structured/grammar.h"
#include "structured/stack_space.h"

namespace kvd::structured::testing {

// The matcher's stacks after `text`; empty when the grammar rejects a prefix of it.
inline std::vector<int32_t> StacksAfter(StackSpace& stacks, std::string_view text) {
  std::vector<int32_t> state = stacks.initial();
  std::vector<int32_t> next;
  for (char c : text) {
    stacks.StepAll(state, static_cast<uint8_t>(c), next);
    state.swap(next);
    if (state.empty()) break;
  }
  return state;
}

// Whether `text` is a whole sentence of `grammar`.
inline bool Accepts(const Grammar& grammar, std::string_view text) {
  StackSpace stacks(grammar, 1 << 20);
  const std::vector<int32_t> state = StacksAfter(stacks, text);
  return !state.empty() && state.front() == StackSpace::kAccepted;
}

// Whether `text` can be continued into a sentence (or is one).
inline bool IsPrefix(const Grammar& grammar, std::string_view text) {
  StackSpace stacks(grammar, 1 << 20);
  return !StacksAfter(stacks, text).empty();
}

}  // namespace kvd::structured::testing
