#include "cache_store/store/internal/compact_heads.h"

#include <cmath>
#include <vector>

#include "cache_store/store/kv_storage.h"
#include "kernels/dtype.h"

namespace kvd::cache_store::internal {
namespace {

void PutVectors(ByteWriter& out, const std::vector<float>& x, KvStorage storage, int32_t dim) {
  if (storage == KvStorage::kBf16) {
    for (float value : x) out.PutU16(kernels::FloatToBF16(value));
    return;
  }
  if (x.empty()) return;  // a head with no entries: nothing sized by `dim`
  std::vector<int8_t> codes(static_cast<size_t>(dim));
  for (size_t begin = 0; begin + dim <= x.size(); begin += dim) {
    const uint16_t scale = Int8Scale(x.data() + begin, dim);
    Int8Codes(x.data() + begin, dim, scale, codes.data());
    out.PutU16(scale);
    out.PutBytes(std::string_view(reinterpret_cast<const char*>(codes.data()), codes.size()));
  }
}

bool GetVectors(ByteReader& in, uint32_t entries, KvStorage storage, int32_t dim,
                std::vector<float>& x) {
  const uint64_t bytes_per_entry =
      storage == KvStorage::kBf16 ? 2 * uint64_t(dim) : 2 + uint64_t(dim);
  if (entries > in.remaining() / bytes_per_entry) return false;
  x.resize(uint64_t{entries} * dim);
  // Nothing sized by `dim` is allocated before an entry shows the input holds that many bytes.
  if (entries == 0) return true;
  if (storage == KvStorage::kBf16) {
    for (float& value : x) {
      uint16_t bits = 0;
      if (!in.GetU16(bits)) return false;
      value = kernels::BF16ToFloat(bits);
    }
    return true;
  }
  std::vector<int8_t> codes, again(static_cast<size_t>(dim));
  for (uint32_t e = 0; e < entries; ++e) {
    uint16_t scale = 0;
    if (!in.GetU16(scale) || !in.GetArray(static_cast<uint64_t>(dim), codes)) return false;
    if (!std::isfinite(kernels::BF16ToFloat(scale))) return false;
    float* entry = x.data() + uint64_t{e} * dim;
    for (int32_t i = 0; i < dim; ++i) entry[i] = Int8Value(codes[i], scale);
    // Only the code the encoder writes for these values is accepted (a scale of max|x| / 127,
    // codes within ±127), so every stored entry has one encoding and decodes to what it was.
    if (Int8Scale(entry, dim) != scale) return false;
    Int8Codes(entry, dim, scale, again.data());
    if (again != codes) return false;
  }
  return true;
}

}  // namespace

void PutCompactHead(ByteWriter& out, const HeadKv& head, KvStorage storage, int32_t head_dim) {
  out.PutU32(static_cast<uint32_t>(head.kept()));
  int32_t previous = -1;
  for (int32_t position : head.positions) {
    out.PutVarint(static_cast<uint32_t>(position - previous - 1));
    previous = position;
  }
  PutVectors(out, head.keys, storage, head_dim);
  PutVectors(out, head.values, storage, head_dim);
  for (float vote : head.log_votes) out.PutU16(kernels::FloatToBF16(vote));
  for (int32_t position : head.positions) out.PutU16(kernels::FloatToF16(head.scores[position]));
}

bool GetCompactHead(ByteReader& in, KvStorage storage, int32_t head_dim, int32_t original_length,
                    HeadKv& head) {
  uint32_t kept = 0;
  if (!in.GetU32(kept) || kept > static_cast<uint32_t>(original_length)) return false;
  if (kept > in.remaining()) return false;  // a position takes at least a byte
  head.positions.resize(kept);
  int64_t previous = -1;
  for (int32_t& position : head.positions) {
    uint32_t gap = 0;
    if (!in.GetVarint(gap)) return false;
    const int64_t next = previous + 1 + gap;
    if (next >= original_length) return false;
    position = static_cast<int32_t>(next);
    previous = next;
  }
  if (!GetVectors(in, kept, storage, head_dim, head.keys) ||
      !GetVectors(in, kept, storage, head_dim, head.values)) {
    return false;
  }
  std::vector<uint16_t> bits;
  if (!in.GetArray(kept, bits)) return false;
  head.log_votes.resize(kept);
  for (uint32_t i = 0; i < kept; ++i) head.log_votes[i] = kernels::BF16ToFloat(bits[i]);
  if (!in.GetArray(kept, bits)) return false;
  head.scores.assign(static_cast<size_t>(original_length), 0.0f);
  for (uint32_t i = 0; i < kept; ++i) head.scores[head.positions[i]] = kernels::F16ToFloat(bits[i]);
  return true;
}

}  // namespace kvd::cache_store::internal
