// A document as the model reads it under its framing (the chat template's text before it, or
// BOS; then its own tokens) and the prompts that follow it while it is scored: KVzip's
// reconstruction requests and a SnapKV question.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "cache_store/kvzip/document_framing.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace kvd::cache_store {

// The tokens a document's cache is prefilled from. The two parts are encoded separately, as
// a chat request that names the document encodes them (text/chat_document.h).
struct DocumentInput {
  std::string prefix_text;            // the rendered text up to and including the document
  std::vector<int32_t> prefix_ids;    // the tokens before the document (template, BOS): kept
  std::vector<int32_t> document_ids;  // the document's own tokens

  int32_t length() const { return static_cast<int32_t>(prefix_ids.size() + document_ids.size()); }
};

// KVzip's reconstruction prompts, as token pieces that follow the document (DocumentFraming's
// prompts, encoded). Chunk 0 is repeat_all + answer_prefix + its tokens;
// chunk i > 0 is repeat_from + the last kLeadInTokens tokens of chunk i - 1 + answer_prefix +
// its tokens.
struct DocumentPrompts {
  static constexpr int32_t kChunkTokens = 2000;
  static constexpr int32_t kLeadInTokens = 8;
  int32_t chunk_tokens = kChunkTokens;  // the method's value; tests use smaller chunks
  std::vector<int32_t> repeat_all;      // DocumentFraming::repeat_prompt
  std::vector<int32_t> repeat_from;     // DocumentFraming::repeat_from_prompt
  std::vector<int32_t> answer_prefix;   // chat: the end of the turn and the generation prompt
};

// The text and the chat template (null for kPlain) a document is framed with. Borrowed.
struct DocumentPipeline {
  const DocumentFraming* framing = nullptr;
  const text::ChatTemplate* chat_template = nullptr;
  const text::Tokenizer* tokenizer = nullptr;
};

// Frames `text` as a document and encodes it: kChat places it in a chat with the framing's
// role; kPlain puts the tokenizer's BOS (its post-processor's prefix) before it.
// InvalidArgument when the text is empty, or a kChat template is missing or cannot hold a
// reusable document (text/chat_document.h).
[[nodiscard]] absl::StatusOr<DocumentInput> PrepareDocument(const DocumentPipeline& pipeline,
                                                            std::string_view text);

[[nodiscard]] absl::StatusOr<DocumentPrompts> PrepareDocumentPrompts(
    const DocumentPipeline& pipeline);

// What follows the document while KVzip scores its chunk [begin, end): the chunk's
// reconstruction request and answer prefix, then the chunk's own tokens (as above).
std::vector<int32_t> ReconstructionTokens(const DocumentPrompts& prompts,
                                          std::span<const int32_t> document_ids, int32_t begin,
                                          int32_t end);

// A question as it follows a document in its turn: "\n\n" + question + answer_prefix.
std::vector<int32_t> QuestionTokens(const text::Tokenizer& tokenizer,
                                    const DocumentPrompts& prompts, std::string_view question);

}  // namespace kvd::cache_store
