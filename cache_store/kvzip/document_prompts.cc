#include "cache_store/kvzip/document_prompts.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kvd::cache_store {

absl::StatusOr<DocumentInput> PrepareDocument(const engine::ChatTemplate& chat_template,
                                              const engine::Tokenizer& tokenizer,
                                              std::string_view text, engine::DocumentRole role) {
  absl::StatusOr<engine::DocumentChat> split = engine::SplitDocumentChat(
      chat_template, text, nlohmann::ordered_json::array(), /*add_generation_prompt=*/true,
      nlohmann::ordered_json::object(), role);
  if (!split.ok()) return split.status();
  DocumentInput input;
  input.prefix_text = std::move(split->prefix);
  const std::string_view before(input.prefix_text.data(), input.prefix_text.size() - text.size());
  input.prefix_ids = tokenizer.Encode(before, /*add_special_tokens=*/false);
  input.document_ids = tokenizer.Encode(text, /*add_special_tokens=*/false);
  return input;
}

absl::StatusOr<DocumentPrompts> PrepareDocumentPrompts(const engine::ChatTemplate& chat_template,
                                                       const engine::Tokenizer& tokenizer,
                                                       engine::DocumentRole role) {
  // What follows a document alone in its turn, up to the assistant's answer.
  absl::StatusOr<engine::DocumentChat> split = engine::SplitDocumentChat(
      chat_template, "document", nlohmann::ordered_json::array(), /*add_generation_prompt=*/true,
      nlohmann::ordered_json::object(), role);
  if (!split.ok()) return split.status();
  DocumentPrompts prompts;
  prompts.repeat_all = tokenizer.Encode("\n\nRepeat the previous context exactly.", false);
  prompts.repeat_from = tokenizer.Encode(
      "\n\nRepeat the part of the previous context exactly, starting with ", false);
  prompts.answer_prefix = tokenizer.Encode(split->suffix, false);
  return prompts;
}

std::vector<int32_t> QuestionTokens(const engine::Tokenizer& tokenizer,
                                    const DocumentPrompts& prompts, std::string_view question) {
  std::vector<int32_t> tokens =
      tokenizer.Encode(absl::StrCat("\n\n", std::string(question)), false);
  tokens.insert(tokens.end(), prompts.answer_prefix.begin(), prompts.answer_prefix.end());
  return tokens;
}

}  // namespace kvd::cache_store
