#include "cache_store/store/kv_storage.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/enum_names.h"
#include "kernels/dtype.h"

namespace kvd::cache_store {
namespace {

constexpr float kLargestF16 = 65504.0f;

constexpr auto kKvStorageNames = base::MakeEnumNames<KvStorage>({
    {KvStorage::kF32, "f32"},
    {KvStorage::kBf16, "bf16"},
    {KvStorage::kInt8, "int8"},
});

float RoundBf16(float x) { return kernels::BF16ToFloat(kernels::FloatToBF16(x)); }

// Rounds `x` [entries * dim] entry by entry through its int8 code.
void RoundInt8(std::vector<float>& x, int32_t dim) {
  if (x.empty()) return;  // a head with no entries: nothing sized by `dim`
  std::vector<int8_t> codes(static_cast<size_t>(dim));
  for (size_t begin = 0; begin + dim <= x.size(); begin += dim) {
    float* entry = x.data() + begin;
    const uint16_t scale = Int8Scale(entry, dim);
    Int8Codes(entry, dim, scale, codes.data());
    for (int32_t i = 0; i < dim; ++i) entry[i] = Int8Value(codes[i], scale);
  }
}

}  // namespace

const char* KvStorageName(KvStorage storage) { return kKvStorageNames.Name(storage).data(); }

absl::StatusOr<KvStorage> ParseKvStorage(std::string_view name) {
  return kKvStorageNames.Parse(name, "kv_dtype");
}

uint16_t Int8Scale(const float* x, int32_t n) {
  float largest = 0.0f;
  for (int32_t i = 0; i < n; ++i) largest = std::max(largest, std::fabs(x[i]));
  // bf16 keeps f32's range, so no finite scale overflows; its rounding moves max|x| / scale by
  // under 0.4%, so the largest entry's code is always ±127.
  return kernels::FloatToBF16(largest / 127.0f);
}

void Int8Codes(const float* x, int32_t n, uint16_t scale_bits, int8_t* codes) {
  const float scale = kernels::BF16ToFloat(scale_bits);
  for (int32_t i = 0; i < n; ++i) {
    float code = scale > 0.0f ? std::nearbyint(x[i] / scale) : 0.0f;
    if (std::isnan(code)) code = 0.0f;  // a non-finite input has no code; Validate refuses it
    codes[i] = static_cast<int8_t>(std::clamp(code, -127.0f, 127.0f));
  }
}

float Int8Value(int8_t code, uint16_t scale_bits) {
  // Exact: a 7-bit code times an 8-bit significand.
  return static_cast<float>(code) * kernels::BF16ToFloat(scale_bits);
}

float StoredScore(KvStorage storage, float score) {
  if (storage == KvStorage::kF32) return score;
  if (std::isfinite(score)) score = std::clamp(score, -kLargestF16, kLargestF16);
  return kernels::F16ToFloat(kernels::FloatToF16(score));
}

void RoundForStorage(KvStorage storage, DocumentPayload& payload) {
  payload.storage = storage;
  if (storage == KvStorage::kF32) return;
  for (HeadKv& head : payload.heads) {
    if (storage == KvStorage::kBf16) {
      for (float& x : head.keys) x = RoundBf16(x);
      for (float& x : head.values) x = RoundBf16(x);
    } else {
      RoundInt8(head.keys, payload.head_dim);
      RoundInt8(head.values, payload.head_dim);
    }
    for (float& vote : head.log_votes) vote = RoundBf16(vote);
    // Only a kept entry's score is ever read (a re-cut picks among the entries held), so a
    // compact payload keeps those alone.
    std::vector<float> scores(head.scores.size(), 0.0f);
    for (int32_t position : head.positions) {
      scores[position] = StoredScore(storage, head.scores[position]);
    }
    head.scores = std::move(scores);
  }
}

}  // namespace kvd::cache_store
