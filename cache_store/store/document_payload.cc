#include "cache_store/store/document_payload.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace kvd::cache_store {
namespace {

constexpr int64_t kMaxHeads = 1 << 20;

bool AllFinite(const std::vector<float>& values) {
  for (float value : values) {
    if (!std::isfinite(value)) return false;
  }
  return true;
}

absl::Status ValidateHead(const HeadKv& head, int64_t head_dim, int32_t original_length,
                          const std::string& where) {
  const int64_t kept = static_cast<int64_t>(head.positions.size());
  if (kept > original_length) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " keeps ", kept, " entries of ", original_length));
  }
  if (static_cast<int64_t>(head.keys.size()) != kept * head_dim ||
      static_cast<int64_t>(head.values.size()) != kept * head_dim ||
      static_cast<int64_t>(head.log_votes.size()) != kept) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": keys, values and log_votes must hold ",
                                                   kept, " entries of head_dim ", head_dim));
  }
  if (static_cast<int64_t>(head.scores.size()) != original_length) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " has ", head.scores.size(), " scores, expected ", original_length));
  }
  for (int64_t i = 0; i < kept; ++i) {
    const int32_t position = head.positions[i];
    if (position < 0 || position >= original_length ||
        (i > 0 && position <= head.positions[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": positions must increase strictly within [0, ", original_length, ")"));
    }
  }
  if (!AllFinite(head.keys) || !AllFinite(head.values) || !AllFinite(head.log_votes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": keys, values and log_votes must be finite"));
  }
  for (float score : head.scores) {
    if (std::isnan(score)) return absl::InvalidArgumentError(absl::StrCat(where, ": NaN score"));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t DocumentPayload::kept_entries() const {
  int64_t total = 0;
  for (const HeadKv& head : heads) total += head.kept();
  return total;
}

absl::Status DocumentPayload::Validate() const {
  if (num_layers <= 0 || num_kv_heads <= 0 || head_dim <= 0 || original_length < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("payload geometry must be positive: layers ", num_layers, ", kv heads ",
                     num_kv_heads, ", head_dim ", head_dim, ", original length ", original_length));
  }
  const int64_t num_heads = static_cast<int64_t>(num_layers) * num_kv_heads;
  if (num_heads > kMaxHeads || static_cast<int64_t>(heads.size()) != num_heads) {
    return absl::InvalidArgumentError(
        absl::StrCat("payload has ", heads.size(), " heads, expected ", num_heads));
  }
  if (static_cast<int64_t>(prefix_token_ids.size()) > original_length) {
    return absl::InvalidArgumentError(absl::StrCat("payload has ", prefix_token_ids.size(),
                                                   " prefix tokens, more than its original length ",
                                                   original_length));
  }
  for (int32_t layer = 0; layer < num_layers; ++layer) {
    for (int32_t kv_head = 0; kv_head < num_kv_heads; ++kv_head) {
      absl::Status status = ValidateHead(head(layer, kv_head), head_dim, original_length,
                                         absl::StrCat("layer ", layer, " kv head ", kv_head));
      if (!status.ok()) return status;
    }
  }
  return absl::OkStatus();
}

}  // namespace kvd::cache_store
