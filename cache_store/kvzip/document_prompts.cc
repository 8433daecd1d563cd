#include "cache_store/kvzip/document_prompts.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kvd::cache_store {
namespace {

// The chat framing's document turn rendered and cut after the document.
absl::StatusOr<text::DocumentChat> SplitTurn(const DocumentPipeline& pipeline,
                                             std::string_view text) {
  if (pipeline.chat_template == nullptr) {
    return absl::InvalidArgumentError("chat framing needs a chat template; this model has none");
  }
  return text::SplitDocumentChat(*pipeline.chat_template, text, nlohmann::ordered_json::array(),
                                 /*add_generation_prompt=*/true, nlohmann::ordered_json::object(),
                                 pipeline.framing->role);
}

}  // namespace

absl::StatusOr<DocumentInput> PrepareDocument(const DocumentPipeline& pipeline,
                                              std::string_view text) {
  const text::Tokenizer& tokenizer = *pipeline.tokenizer;
  if (text.empty()) return absl::InvalidArgumentError("the document is empty");
  DocumentInput input;
  if (pipeline.framing->kind == FramingKind::kPlain) {
    const std::span<const int32_t> bos = tokenizer.template_prefix();
    input.prefix_ids.assign(bos.begin(), bos.end());
    absl::StatusOr<std::string> bos_text = tokenizer.Decode(input.prefix_ids);
    if (!bos_text.ok()) return bos_text.status();
    input.prefix_text = *bos_text + std::string(text);
  } else {
    absl::StatusOr<text::DocumentChat> split = SplitTurn(pipeline, text);
    if (!split.ok()) return split.status();
    input.prefix_text = std::move(split->prefix);
    const std::string_view before(input.prefix_text.data(), input.prefix_text.size() - text.size());
    input.prefix_ids = tokenizer.Encode(before, /*add_special_tokens=*/false);
  }
  input.document_ids = tokenizer.Encode(text, /*add_special_tokens=*/false);
  return input;
}

absl::StatusOr<DocumentPrompts> PrepareDocumentPrompts(const DocumentPipeline& pipeline) {
  const DocumentFraming& framing = *pipeline.framing;
  const text::Tokenizer& tokenizer = *pipeline.tokenizer;
  std::string answer_prefix;
  if (framing.answer_prefix.has_value()) {
    answer_prefix = *framing.answer_prefix;
  } else if (framing.kind == FramingKind::kPlain) {
    answer_prefix = kDefaultPlainAnswerPrefix;
  } else {
    // What follows a document alone in its turn, up to the assistant's answer.
    absl::StatusOr<text::DocumentChat> split = SplitTurn(pipeline, "document");
    if (!split.ok()) return split.status();
    answer_prefix = std::move(split->suffix);
  }
  DocumentPrompts prompts;
  prompts.repeat_all = tokenizer.Encode(framing.repeat_prompt, false);
  prompts.repeat_from = tokenizer.Encode(framing.repeat_from_prompt, false);
  prompts.answer_prefix = tokenizer.Encode(answer_prefix, false);
  return prompts;
}

std::vector<int32_t> ReconstructionTokens(const DocumentPrompts& prompts,
                                          std::span<const int32_t> document_ids, int32_t begin,
                                          int32_t end) {
  std::vector<int32_t> tokens;
  if (begin == 0) {
    tokens = prompts.repeat_all;
  } else {
    tokens = prompts.repeat_from;
    tokens.insert(tokens.end(),
                  document_ids.begin() + std::max(0, begin - DocumentPrompts::kLeadInTokens),
                  document_ids.begin() + begin);
  }
  tokens.insert(tokens.end(), prompts.answer_prefix.begin(), prompts.answer_prefix.end());
  tokens.insert(tokens.end(), document_ids.begin() + begin, document_ids.begin() + end);
  return tokens;
}

std::vector<int32_t> QuestionTokens(const text::Tokenizer& tokenizer,
                                    const DocumentPrompts& prompts, std::string_view question) {
  std::vector<int32_t> tokens =
      tokenizer.Encode(absl::StrCat("\n\n", std::string(question)), false);
  tokens.insert(tokens.end(), prompts.answer_prefix.begin(), prompts.answer_prefix.end());
  return tokens;
}

}  // namespace kvd::cache_store
