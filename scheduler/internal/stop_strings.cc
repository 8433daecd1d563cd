#include "scheduler/internal/stop_strings.h"

#include <algorithm>

namespace kvd::scheduler::internal {

StopStringMatcher::Result StopStringMatcher::Push(std::string_view text, bool match) {
  held_.append(text);
  Result result;
  if (!match || stops_.empty()) {
    result.released = std::move(held_);
    held_.clear();
    return result;
  }
  // Released text never ends in the start of a stop string, so a match lies inside held_.
  size_t best_position = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t position = held_.find(stops_[i]);
    if (position < best_position) {
      best_position = position;
      result.matched = i;
    }
  }
  if (result.matched) {
    result.released = held_.substr(0, best_position);
    held_.clear();
    return result;
  }
  const size_t keep = LongestPartialStop();
  result.released = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return result;
}

std::string StopStringMatcher::Flush() {
  std::string released = std::move(held_);
  held_.clear();
  return released;
}

size_t StopStringMatcher::LongestPartialStop() const {
  size_t longest = 0;
  const std::string_view held(held_);
  for (const std::string& stop : stops_) {
    for (size_t length = std::min(stop.size() - 1, held.size()); length > longest; --length) {
      if (held.substr(held.size() - length) == std::string_view(stop).substr(0, length)) {
        longest = length;
        break;
      }
    }
  }
  return longest;
}

}  // namespace kvd::scheduler::internal
