// Fuzzes cache_store::DecodePayload, the reader of stored document caches: on the input as it
// is, and on the input framed as a body of each format (f32 and compact) with a valid header and
// checksum (so the body parsers are reached). Whatever decodes must encode back to the same bytes.
#include <string>

#include "base/sha256.h"
#include "cache_store/store/internal/byte_io.h"
#include "cache_store/store/payload_codec.h"
#include "fuzz_support.h"

namespace {

// The stored framing (payload_codec.cc): magic, version, body size, body, SHA-256 of the rest.
std::string Framed(std::string_view body, uint32_t version) {
  kvd::cache_store::internal::ByteWriter out;
  out.PutBytes("KVDP");
  out.PutU32(version);
  out.PutU64(body.size());
  out.PutBytes(body);
  const auto digest = kvd::base::Sha256(out.bytes());
  out.PutBytes(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
  return out.Release();
}

void DecodeAndRoundTrip(std::string_view bytes) {
  auto payload = kvd::cache_store::DecodePayload(bytes);
  if (!payload.ok()) return;
  auto encoded = kvd::cache_store::EncodePayload(*payload);
  kvd::fuzz::Require(encoded.ok(), "a decoded payload does not encode");
  kvd::fuzz::Require(*encoded == bytes, "a decoded payload encodes to other bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = kvd::fuzz::AsText(data, size);
  DecodeAndRoundTrip(bytes);
  DecodeAndRoundTrip(Framed(bytes, kvd::cache_store::kPayloadFormatVersion));
  DecodeAndRoundTrip(Framed(bytes, kvd::cache_store::kCompactPayloadFormatVersion));
  return 0;
}
