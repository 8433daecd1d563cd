#include "structured/token_trie.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kvd::structured {

absl::StatusOr<std::unique_ptr<TokenTrie>> TokenTrie::Create(const text::Tokenizer& tokenizer,
                                                             std::vector<int32_t> end_tokens) {
  auto trie = std::unique_ptr<TokenTrie>(new TokenTrie());
  trie->vocab_size_ = tokenizer.vocab_size();
  for (int32_t token : end_tokens) {
    if (token < 0 || token >= trie->vocab_size_) {
      return absl::InvalidArgumentError(
          absl::StrCat("end token ", token, " is outside the vocabulary"));
    }
  }
  std::sort(end_tokens.begin(), end_tokens.end());
  end_tokens.erase(std::unique(end_tokens.begin(), end_tokens.end()), end_tokens.end());
  trie->end_tokens_ = std::move(end_tokens);

  std::vector<std::pair<std::string_view, int32_t>> spelled;
  spelled.reserve(trie->vocab_size_);
  trie->has_text_.assign(trie->vocab_size_, false);
  trie->text_offsets_.push_back(0);
  for (int32_t id = 0; id < trie->vocab_size_; ++id) {
    // An end token ends the output, never writes text, even where a model's EOS is a vocab token.
    const bool no_text = tokenizer.IsSpecial(id) || std::binary_search(trie->end_tokens_.begin(),
                                                                       trie->end_tokens_.end(), id);
    const absl::StatusOr<std::string_view> bytes =
        no_text ? std::string_view() : tokenizer.TokenBytesView(id);
    const bool has_text = bytes.ok() && !bytes->empty();
    if (has_text) trie->text_bytes_.append(*bytes);
    trie->text_offsets_.push_back(static_cast<uint32_t>(trie->text_bytes_.size()));
    if (!has_text) continue;
    trie->has_text_[id] = true;
    if (bytes->size() > UINT16_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat("token ", id, " is longer than ", UINT16_MAX, " bytes"));
    }
    spelled.emplace_back(*bytes, id);
  }
  std::sort(spelled.begin(), spelled.end());

  // Preorder: each token adds the nodes past its common prefix with the previous token.
  std::vector<uint32_t> open;  // the nodes on the path to the last token, by depth - 1
  std::string_view previous;
  std::vector<std::vector<int32_t>> tokens_at;
  for (const auto& [bytes, id] : spelled) {
    size_t common = 0;
    while (common < previous.size() && common < bytes.size() && previous[common] == bytes[common]) {
      ++common;
    }
    for (size_t depth = open.size(); depth > common; --depth) {
      trie->subtree_ends_[open[depth - 1]] = static_cast<uint32_t>(trie->bytes_.size());
    }
    open.resize(common);
    for (size_t depth = common; depth < bytes.size(); ++depth) {
      open.push_back(static_cast<uint32_t>(trie->bytes_.size()));
      trie->bytes_.push_back(static_cast<uint8_t>(bytes[depth]));
      trie->depths_.push_back(static_cast<uint16_t>(depth + 1));
      trie->subtree_ends_.push_back(0);
      tokens_at.emplace_back();
    }
    tokens_at[open.back()].push_back(id);
    trie->max_depth_ = std::max(trie->max_depth_, bytes.size());
    previous = bytes;
  }
  for (uint32_t node : open) trie->subtree_ends_[node] = static_cast<uint32_t>(trie->bytes_.size());
  trie->token_offsets_.push_back(0);
  for (const std::vector<int32_t>& ids : tokens_at) {
    trie->tokens_.insert(trie->tokens_.end(), ids.begin(), ids.end());
    trie->token_offsets_.push_back(static_cast<uint32_t>(trie->tokens_.size()));
  }
  return trie;
}

}  // namespace kvd::structured
