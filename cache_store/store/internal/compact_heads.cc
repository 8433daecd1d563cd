#include "cache_store/store/internal/compact_heads.h"

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
  if (storage == KvStorage::kBf16) {
    for (float& value : x) {
      uint16_t bits = 0;
      if (!in.GetU16(bits)) return false;
      value = kernels::BF16ToFloat(bits);
    }
    return true;
  }
  std::vector<int8_t> codes;
  for (uint32_t e = 0; e < entries; ++e) {
    uint16_t scale = 0;
    if (!in.GetU16(scale) || !in.GetArray(static_cast<uint64_t>(dim), codes)) return false;
    for (int32_t i = 0; i < dim; ++i) x[uint64_t{e} * dim + i] = Int8Value(codes[i], scale);
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
  for (float score : head.scores) out.PutU16(kernels::FloatToF16(score));
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
  if (!in.GetArray(static_cast<uint64_t>(original_length), bits)) return false;
  head.scores.resize(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) head.scores[i] = kernels::F16ToFloat(bits[i]);
  return true;
}

}  // namespace kvd::cache_store::internal
