#include "text/internal/bpe_model.h"

#include <algorithm>
#include <limits>
#include <queue>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "text/internal/absl_string_view.h"
#include "text/internal/byte_level.h"
#include "text/internal/utf8.h"

namespace kvd::text::internal {
namespace {

// Words up to this many symbols merge by rescanning (cheap, allocation-free); longer ones use a
// priority queue so that pathological inputs stay O(n log n).
constexpr size_t kMaxScanSymbols = 64;
constexpr int32_t kNoRank = std::numeric_limits<int32_t>::max();

}  // namespace

absl::StatusOr<std::unique_ptr<BpeModel>> BpeModel::Create(BpeModelConfig config,
                                                           std::string_view source_name) {
  // Debian's Abseil keeps its own string_view, which StrCat does not take from std.
  const std::string source(source_name);
  auto error = [&](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", parts...));
  };
  std::unique_ptr<BpeModel> model(new BpeModel());
  model->ignore_merges_ = config.ignore_merges;
  model->byte_level_ = config.byte_level;
  model->byte_fallback_ = config.byte_fallback;
  model->fuse_unk_ = config.fuse_unk;

  int32_t id_end = 0;
  for (const auto& [symbol, id] : config.vocab) {
    if (id < 0 || id >= config.id_limit) {
      return error("model.vocab: token \"", symbol, "\" has id ", id, ", outside [0, ",
                   config.id_limit, ") (the vocab size plus the added tokens)");
    }
    id_end = std::max(id_end, id + 1);
  }
  model->tokens_.resize(id_end);
  model->symbol_to_id_.reserve(config.vocab.size());
  for (auto& [symbol, id] : config.vocab) {
    Token& token = model->tokens_[id];
    if (token.present) {
      return error("model.vocab: id ", id, " is given to both \"", token.symbol, "\" and \"",
                   symbol, "\"");
    }
    token.present = true;
    model->symbol_to_id_.emplace(symbol, id);
    if (!config.byte_level) {
      char32_t c;
      if (!symbol.empty() && DecodeUtf8At(symbol, 0, &c) == symbol.size() &&
          c != static_cast<char32_t>(-1)) {
        model->char_ids_.emplace(c, id);
      }
    }
    token.symbol = std::move(symbol);
  }

  if (config.byte_level) {
    const std::array<std::string, 256>& byte_symbols = ByteLevelSymbols();
    for (int b = 0; b < 256; ++b) {
      const std::optional<int32_t> id = model->SymbolToId(byte_symbols[b]);
      if (!id.has_value()) {
        return error(
            absl::StrFormat("model.vocab: no token for byte 0x%02X (\"%s\"); a byte-level "
                            "vocab must spell all 256 bytes",
                            b, byte_symbols[b]));
      }
      model->byte_ids_[b] = *id;
    }
  } else {
    for (int b = 0; b < 256; ++b) {
      model->fallback_ids_[b] = model->SymbolToId(absl::StrFormat("<0x%02X>", b)).value_or(-1);
    }
    if (!config.unk_token.empty()) {
      const std::optional<int32_t> unk = model->SymbolToId(config.unk_token);
      if (!unk.has_value()) {
        return error("model.unk_token: \"", config.unk_token, "\" is not in the vocab");
      }
      model->unk_id_ = *unk;
    }
  }

  model->merges_.reserve(config.merges.size());
  for (size_t rank = 0; rank < config.merges.size(); ++rank) {
    // Named references, not a structured binding: clang before 16 cannot capture one in the
    // lambda below.
    const std::string& left = config.merges[rank].first;
    const std::string& right = config.merges[rank].second;
    const std::optional<int32_t> left_id = model->SymbolToId(left);
    const std::optional<int32_t> right_id = model->SymbolToId(right);
    const std::optional<int32_t> merged_id = model->SymbolToId(absl::StrCat(left, right));
    auto merge_error = [&](const char* what, const std::string& token) {
      return error("model.merges[", rank, "] (\"", left, " ", right, "\"): ", what, " \"", token,
                   "\" is not in the vocab");
    };
    if (!left_id.has_value()) return merge_error("token", left);
    if (!right_id.has_value()) return merge_error("token", right);
    if (!merged_id.has_value()) return merge_error("merged token", absl::StrCat(left, right));
    if (rank > static_cast<size_t>(kNoRank - 1)) return error("model.merges: too many merges");
    // A repeated pair takes its last rank, as Hugging Face's map insertion does.
    model->merges_.insert_or_assign(PairKey(*left_id, *right_id),
                                    Merge{static_cast<int32_t>(rank), *merged_id});
  }
  return model;
}

std::optional<int32_t> BpeModel::SymbolToId(std::string_view symbol) const {
  const auto it = symbol_to_id_.find(AsAbsl(symbol));
  if (it == symbol_to_id_.end()) return std::nullopt;
  return it->second;
}

BpeModel::Symbols BpeModel::ByteSymbols(std::string_view word) const {
  Symbols symbols(word.size());
  for (size_t i = 0; i < word.size(); ++i) {
    symbols[i] = byte_ids_[static_cast<unsigned char>(word[i])];
  }
  return symbols;
}

BpeModel::Symbols BpeModel::CharacterSymbols(std::string_view word) const {
  Symbols symbols;
  bool last_unknown = false;
  size_t pos = 0;
  while (pos < word.size()) {
    char32_t c;
    const size_t n = DecodeUtf8At(word, pos, &c);
    const std::string_view character = word.substr(pos, n);
    pos += n;
    if (c != static_cast<char32_t>(-1)) {
      if (const auto it = char_ids_.find(c); it != char_ids_.end()) {
        symbols.push_back(it->second);
        last_unknown = false;
        continue;
      }
    }
    if (byte_fallback_ && std::all_of(character.begin(), character.end(), [&](char b) {
          return fallback_ids_[static_cast<unsigned char>(b)] >= 0;
        })) {
      for (char b : character) symbols.push_back(fallback_ids_[static_cast<unsigned char>(b)]);
      last_unknown = false;
      continue;
    }
    if (unk_id_ >= 0 && !(fuse_unk_ && last_unknown)) symbols.push_back(unk_id_);
    last_unknown = unk_id_ >= 0;  // without an unknown token the character is dropped, as in HF
  }
  return symbols;
}

void BpeModel::EncodeWord(std::string_view word, std::vector<int32_t>* ids) const {
  if (word.size() == 1 && byte_level_) {
    ids->push_back(byte_ids_[static_cast<unsigned char>(word[0])]);
    return;
  }
  if (cache_.Lookup(word, ids)) return;
  if (ignore_merges_) {
    const std::optional<int32_t> id =
        byte_level_ ? SymbolToId(EncodeByteLevel(word)) : SymbolToId(word);
    if (id.has_value()) {
      ids->push_back(*id);
      return;  // Found in the vocab directly: cheaper than the cache, no need to cache it.
    }
  }
  Symbols symbols = byte_level_ ? ByteSymbols(word) : CharacterSymbols(word);
  if (symbols.size() <= kMaxScanSymbols) {
    MergeByScan(symbols);
  } else {
    MergeByQueue(symbols);
  }
  ids->insert(ids->end(), symbols.begin(), symbols.end());
  cache_.Insert(word, symbols);
}

void BpeModel::MergeByScan(Symbols& symbols) const {
  if (symbols.size() < 2) return;
  // ranks[i] and merged[i] describe the pair (symbols[i], symbols[i + 1]).
  absl::InlinedVector<int32_t, 32> ranks(symbols.size() - 1);
  absl::InlinedVector<int32_t, 32> merged(symbols.size() - 1);
  auto update = [&](size_t i) {
    const Merge* merge = FindMerge(symbols[i], symbols[i + 1]);
    ranks[i] = merge ? merge->rank : kNoRank;
    merged[i] = merge ? merge->new_id : -1;
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) update(i);
  while (!ranks.empty()) {
    size_t best = 0;
    for (size_t i = 1; i < ranks.size(); ++i) {
      if (ranks[i] < ranks[best]) best = i;
    }
    if (ranks[best] == kNoRank) break;
    symbols[best] = merged[best];
    symbols.erase(symbols.begin() + best + 1);
    ranks.erase(ranks.begin() + best);
    merged.erase(merged.begin() + best);
    if (best > 0) update(best - 1);
    if (best < ranks.size()) update(best);
  }
}

void BpeModel::MergeByQueue(Symbols& symbols) const {
  const int32_t n = static_cast<int32_t>(symbols.size());
  if (n < 2) return;
  // A doubly linked list over the symbols; merged-away symbols are marked dead.
  struct Node {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  std::vector<Node> nodes(n);
  for (int32_t i = 0; i < n; ++i) nodes[i] = {symbols[i], i - 1, i + 1 < n ? i + 1 : -1, true};

  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto push = [&](int32_t pos) {
    const int32_t next = nodes[pos].next;
    if (next < 0) return;
    if (const Merge* merge = FindMerge(nodes[pos].id, nodes[next].id)) {
      queue.push({merge->rank, pos, merge->new_id});
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Node& left = nodes[top.pos];
    if (!left.alive || left.next < 0) continue;
    // Skip stale entries: the pair at this position changed since it was queued.
    const Merge* merge = FindMerge(left.id, nodes[left.next].id);
    if (merge == nullptr || merge->new_id != top.new_id) continue;
    Node& right = nodes[left.next];
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) nodes[right.next].prev = top.pos;
    if (left.prev >= 0) push(left.prev);
    push(top.pos);
  }

  symbols.clear();
  for (int32_t i = 0; i >= 0; i = nodes[i].next) symbols.push_back(nodes[i].id);
}

}  // namespace kvd::text::internal
