// A set of token ids over a vocabulary: what a constraint allows as the next token.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "engine/sampling.h"

namespace kvd::structured {

class TokenMask {
 public:
  explicit TokenMask(int32_t vocab_size)
      : vocab_size_(vocab_size), words_((static_cast<size_t>(vocab_size) + 63) / 64, 0) {}

  int32_t vocab_size() const { return vocab_size_; }
  void Allow(int32_t token) { words_[token >> 6] |= uint64_t{1} << (token & 63); }
  bool allows(int32_t token) const {
    return token >= 0 && token < vocab_size_ && ((words_[token >> 6] >> (token & 63)) & 1);
  }
  int32_t count() const {
    int32_t total = 0;
    for (uint64_t word : words_) total += std::popcount(word);
    return total;
  }
  // Calls `visit(token)` for every allowed token, in increasing order.
  template <typename Visit>
  void ForEach(Visit&& visit) const {
    for (size_t w = 0; w < words_.size(); ++w) {
      for (uint64_t word = words_[w]; word != 0; word &= word - 1) {
        visit(static_cast<int32_t>(w * 64 + std::countr_zero(word)));
      }
    }
  }
  size_t bytes() const { return words_.size() * sizeof(uint64_t); }
  // The view the sampler takes.
  engine::AllowedTokens allowed() const { return {words_}; }

 private:
  int32_t vocab_size_;
  std::vector<uint64_t> words_;
};

}  // namespace kvd::structured
