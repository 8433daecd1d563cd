// Finds stop strings in streamed text without ever releasing part of one: text that could be
// the start of a stop string is held back until the next piece settles it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvd::scheduler::internal {

class StopStringMatcher {
 public:
  // Stop strings must be non-empty.
  explicit StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  struct Result {
    std::string released;           // text safe to emit
    std::optional<size_t> matched;  // index of the stop string found; the text ends before it
  };

  // Adds `text`. With `match` false (before min_tokens), everything is released unmatched.
  Result Push(std::string_view text, bool match = true);
  // Releases what is held back (the stream ended for another reason).
  std::string Flush();

 private:
  // Length of the longest suffix of held_ that is a proper prefix of a stop string.
  size_t LongestPartialStop() const;

  std::vector<std::string> stops_;
  std::string held_;
};

}  // namespace kvd::scheduler::internal
