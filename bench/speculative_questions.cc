#include "bench/speculative_questions.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "text/bounded_json.h"

namespace kvd::bench {
namespace {

absl::Status LineError(size_t line, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("questions, line ", line, ": ", why));
}

}  // namespace

absl::StatusOr<std::vector<SpeculativeQuestions>> ParseSpeculativeQuestions(std::string_view text,
                                                                            size_t max_documents) {
  std::vector<SpeculativeQuestions> documents;
  size_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_number;
    if (documents.size() == max_documents) break;
    if (line.find_first_not_of(" \t\r") == absl::string_view::npos) continue;
    absl::StatusOr<nlohmann::json> value =
        text::ParseBoundedJson(std::string_view(line.data(), line.size()), "the line", 8);
    if (!value.ok()) return LineError(line_number, value.status().message());
    if (!value->is_object()) return LineError(line_number, "not a JSON object");
    const auto doc = value->find("doc");
    if (doc == value->end() || !doc->is_string() || doc->get_ref<const std::string&>().empty()) {
      return LineError(line_number, "'doc' must be a non-empty string");
    }
    const auto queries = value->find("queries");
    if (queries == value->end() || !queries->is_array() || queries->empty()) {
      return LineError(line_number, "'queries' must be a non-empty array");
    }
    SpeculativeQuestions document{.document = doc->get<std::string>()};
    for (const nlohmann::json& query : *queries) {
      const auto prompt = query.is_object() ? query.find("prompt") : query.end();
      if (!query.is_object() || prompt == query.end() || !prompt->is_string() ||
          prompt->get_ref<const std::string&>().empty()) {
        return LineError(line_number, "every query must be an object with a non-empty 'prompt'");
      }
      document.questions.push_back(prompt->get<std::string>());
    }
    documents.push_back(std::move(document));
  }
  return documents;
}

}  // namespace kvd::bench
