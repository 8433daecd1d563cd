// Reads the questions the speculative decoding benchmark asks: JSON Lines, one document a line,
// `{"doc": TEXT, "queries": [{"prompt": QUESTION, ...}, ...], ...}` (the form of a model's
// question set, such as qa-dev's questions.jsonl; other members are ignored).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/speculative_bench.h"

namespace kvd::bench {

// The first `max_documents` documents of `text`; blank lines are skipped. InvalidArgument
// naming the line for anything else than the form above, or a line without questions.
[[nodiscard]] absl::StatusOr<std::vector<SpeculativeQuestions>> ParseSpeculativeQuestions(
    std::string_view text, size_t max_documents);

}  // namespace kvd::bench
