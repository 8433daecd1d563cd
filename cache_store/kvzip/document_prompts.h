// A document as the model reads it (the chat template's text before it, then its own tokens)
// and the prompts that follow it while it is scored: KVzip's reconstruction requests and a
// SnapKV question.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/chat_document.h"
#include "engine/chat_template.h"
#include "engine/tokenizer.h"

namespace kvd::cache_store {

// The tokens a document's cache is prefilled from. The two parts are encoded separately, as
// a chat request that names the document encodes them (engine/chat_document.h).
struct DocumentInput {
  std::string prefix_text;            // the rendered text up to and including the document
  std::vector<int32_t> prefix_ids;    // the template's tokens before the document: always kept
  std::vector<int32_t> document_ids;  // the document's own tokens

  int32_t length() const { return static_cast<int32_t>(prefix_ids.size() + document_ids.size()); }
};

// KVzip's reconstruction prompts, as token pieces that follow the document in its turn (the
// published method's exact wording). Chunk 0 is repeat_all + answer_prefix + its tokens;
// chunk i > 0 is repeat_from + the last kLeadInTokens tokens of chunk i - 1 + answer_prefix +
// its tokens.
struct DocumentPrompts {
  static constexpr int32_t kChunkTokens = 2000;
  static constexpr int32_t kLeadInTokens = 8;
  int32_t chunk_tokens = kChunkTokens;  // the method's value; tests use smaller chunks
  std::vector<int32_t> repeat_all;      // "\n\nRepeat the previous context exactly."
  std::vector<int32_t>
      repeat_from;  // "\n\nRepeat the part of the previous context exactly, starting with "
  std::vector<int32_t> answer_prefix;  // the end of the turn and the assistant's generation prompt
};

// Places `text` as a document in a chat with `role` and encodes it. InvalidArgument when the
// text is empty or the template cannot hold a reusable document (engine/chat_document.h).
[[nodiscard]] absl::StatusOr<DocumentInput> PrepareDocument(
    const engine::ChatTemplate& chat_template, const engine::Tokenizer& tokenizer,
    std::string_view text, engine::DocumentRole role);

[[nodiscard]] absl::StatusOr<DocumentPrompts> PrepareDocumentPrompts(
    const engine::ChatTemplate& chat_template, const engine::Tokenizer& tokenizer,
    engine::DocumentRole role);

// A question as it follows a document in its turn: "\n\n" + question + answer_prefix.
std::vector<int32_t> QuestionTokens(const engine::Tokenizer& tokenizer,
                                    const DocumentPrompts& prompts, std::string_view question);

}  // namespace kvd::cache_store
