#include "cache_store/store/cache_identity.h"

#include <bit>
#include <cstdint>

#include "base/sha256.h"
#include "cache_store/store/internal/byte_io.h"

namespace kvd::cache_store {

std::string CacheIdentity::Fingerprint() const {
  internal::ByteWriter writer;
  writer.PutString("kvd.cache_identity.v1");
  writer.PutString(model_digest);
  writer.PutString(tokenizer_digest);
  writer.PutString(kv_dtype);
  writer.PutString(method);
  writer.PutString(method_version);
  writer.PutU64(std::bit_cast<uint64_t>(ratio));
  return base::Sha256Hex(writer.bytes());
}

std::string CacheIdentity::FirstDifference(const CacheIdentity& other) const {
  if (model_digest != other.model_digest) return "model_digest";
  if (tokenizer_digest != other.tokenizer_digest) return "tokenizer_digest";
  if (kv_dtype != other.kv_dtype) return "kv_dtype";
  if (method != other.method) return "method";
  if (method_version != other.method_version) return "method_version";
  if (std::bit_cast<uint64_t>(ratio) != std::bit_cast<uint64_t>(other.ratio)) return "ratio";
  return "";
}

}  // namespace kvd::cache_store
