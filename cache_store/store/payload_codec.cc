#include "cache_store/store/payload_codec.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/sha256.h"
#include "cache_store/store/internal/byte_io.h"
#include "cache_store/store/internal/compact_heads.h"

namespace kvd::cache_store {
namespace {

// Layout: magic[4] | version u32 | body_size u64 | body | sha256[32] over all preceding bytes.
// Body: num_layers, num_kv_heads, head_dim, original_length (u32 each) | format 2 only: storage
// u8 | prefix_text string | prefix token count u64, ids | per head: format 1: kept u32, keys,
// values, log_votes, positions, scores (f32, i32); format 2: internal/compact_heads.h.
constexpr std::string_view kMagic = "KVDP";
constexpr size_t kHeaderSize = 4 + 4 + 8;
constexpr size_t kChecksumSize = 32;

// 2^28 scores (1 GiB): 128 (layer, kv head)s of two million positions.
constexpr uint64_t kMaxCompactScores = uint64_t{1} << 28;

absl::Status Corrupt(const std::string& what) {
  return absl::DataLossError(absl::StrCat("stored document payload is corrupt: ", what));
}

}  // namespace

absl::StatusOr<std::string> EncodePayload(const DocumentPayload& payload) {
  if (absl::Status status = payload.Validate(); !status.ok()) return status;
  const bool compact = payload.storage != KvStorage::kF32;
  internal::ByteWriter body;
  body.PutU32(static_cast<uint32_t>(payload.num_layers));
  body.PutU32(static_cast<uint32_t>(payload.num_kv_heads));
  body.PutU32(static_cast<uint32_t>(payload.head_dim));
  body.PutU32(static_cast<uint32_t>(payload.original_length));
  if (compact) body.PutU8(static_cast<uint8_t>(payload.storage));
  body.PutString(payload.prefix_text);
  body.PutU64(payload.prefix_token_ids.size());
  body.PutArray(payload.prefix_token_ids);
  for (const HeadKv& head : payload.heads) {
    if (compact) {
      internal::PutCompactHead(body, head, payload.storage, payload.head_dim);
      continue;
    }
    body.PutU32(static_cast<uint32_t>(head.kept()));
    body.PutArray(head.keys);
    body.PutArray(head.values);
    body.PutArray(head.log_votes);
    body.PutArray(head.positions);
    body.PutArray(head.scores);
  }
  internal::ByteWriter out;
  out.PutBytes(kMagic);
  out.PutU32(compact ? kCompactPayloadFormatVersion : kPayloadFormatVersion);
  out.PutU64(body.bytes().size());
  out.PutBytes(body.bytes());
  base::Sha256Digest digest = base::Sha256(out.bytes());
  out.PutBytes(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
  return out.Release();
}

absl::StatusOr<DocumentPayload> DecodePayload(std::string_view bytes) {
  if (bytes.size() < kHeaderSize + kChecksumSize) {
    return Corrupt(absl::StrCat("truncated to ", bytes.size(), " bytes"));
  }
  if (bytes.substr(0, kMagic.size()) != kMagic) return Corrupt("bad magic");
  internal::ByteReader header(bytes.substr(kMagic.size(), kHeaderSize - kMagic.size()));
  uint32_t version = 0;
  uint64_t body_size = 0;
  if (!header.GetU32(version) || !header.GetU64(body_size)) return Corrupt("truncated header");
  if (version != kPayloadFormatVersion && version != kCompactPayloadFormatVersion) {
    return Corrupt(absl::StrCat("unsupported format version ", version, " (this build reads ",
                                kPayloadFormatVersion, " and ", kCompactPayloadFormatVersion, ")"));
  }
  if (body_size != bytes.size() - kHeaderSize - kChecksumSize) {
    return Corrupt(absl::StrCat("body of ", body_size, " bytes in a value of ", bytes.size(),
                                " bytes (truncated or extended)"));
  }
  const std::string_view checked = bytes.substr(0, bytes.size() - kChecksumSize);
  base::Sha256Digest digest = base::Sha256(checked);
  if (std::memcmp(digest.data(), bytes.data() + checked.size(), kChecksumSize) != 0) {
    return Corrupt("SHA-256 checksum mismatch");
  }

  internal::ByteReader body(checked.substr(kHeaderSize));
  DocumentPayload payload;
  uint32_t num_layers = 0, num_kv_heads = 0, head_dim = 0, original_length = 0;
  uint64_t num_prefix_tokens = 0;
  uint8_t storage = static_cast<uint8_t>(KvStorage::kF32);
  if (!body.GetU32(num_layers) || !body.GetU32(num_kv_heads) || !body.GetU32(head_dim) ||
      !body.GetU32(original_length) ||
      (version == kCompactPayloadFormatVersion && !body.GetU8(storage)) ||
      !body.GetString(payload.prefix_text) || !body.GetU64(num_prefix_tokens) ||
      !body.GetArray(num_prefix_tokens, payload.prefix_token_ids)) {
    return Corrupt("truncated body");
  }
  payload.num_layers = static_cast<int32_t>(num_layers);
  payload.num_kv_heads = static_cast<int32_t>(num_kv_heads);
  payload.head_dim = static_cast<int32_t>(head_dim);
  payload.original_length = static_cast<int32_t>(original_length);
  if (payload.num_layers <= 0 || payload.num_kv_heads <= 0 || payload.head_dim <= 0 ||
      payload.original_length < 0) {
    return Corrupt("invalid geometry");
  }
  const bool compact = version == kCompactPayloadFormatVersion;
  if (compact && storage != static_cast<uint8_t>(KvStorage::kBf16) &&
      storage != static_cast<uint8_t>(KvStorage::kInt8)) {
    return Corrupt(absl::StrCat("unknown storage precision ", storage));
  }
  payload.storage = static_cast<KvStorage>(storage);
  // Every head takes at least its kept count, so a head count beyond that cannot be real.
  const uint64_t num_heads = uint64_t{num_layers} * num_kv_heads;
  if (num_heads > body.remaining() / sizeof(uint32_t)) return Corrupt("truncated heads");
  // A compact payload spells out the scores of its kept entries alone, yet decodes to one per
  // position and head: bound those by the token ids it holds (one per position) and overall.
  if (compact && (original_length > payload.prefix_token_ids.size() ||
                  num_heads * original_length > kMaxCompactScores)) {
    return Corrupt(absl::StrCat(num_heads, " heads of ", original_length, " positions for ",
                                payload.prefix_token_ids.size(), " token ids"));
  }
  payload.heads.resize(num_heads);
  for (HeadKv& head : payload.heads) {
    if (compact) {
      if (!internal::GetCompactHead(body, payload.storage, payload.head_dim,
                                    payload.original_length, head)) {
        return Corrupt("truncated or inconsistent heads");
      }
      continue;
    }
    uint32_t kept = 0;
    if (!body.GetU32(kept) || kept > original_length) return Corrupt("invalid kept count");
    const uint64_t entries = uint64_t{kept} * head_dim;
    if (!body.GetArray(entries, head.keys) || !body.GetArray(entries, head.values) ||
        !body.GetArray(kept, head.log_votes) || !body.GetArray(kept, head.positions) ||
        !body.GetArray(original_length, head.scores)) {
      return Corrupt("truncated heads");
    }
  }
  if (body.remaining() != 0) {
    return Corrupt(absl::StrCat(body.remaining(), " unexpected trailing bytes"));
  }
  if (absl::Status status = payload.Validate(); !status.ok()) {
    return Corrupt(std::string(status.message()));
  }
  return payload;
}

absl::StatusOr<std::string> SealDocument(DocumentMeta& meta, const DocumentPayload& payload) {
  if (absl::Status status = meta.Validate(); !status.ok()) return status;
  absl::StatusOr<std::string> bytes = EncodePayload(payload);
  if (!bytes.ok()) return bytes.status();
  meta.stored_bytes = static_cast<int64_t>(bytes->size());
  meta.kept_entries = payload.kept_entries();
  meta.storage = payload.storage;
  return bytes;
}

}  // namespace kvd::cache_store
