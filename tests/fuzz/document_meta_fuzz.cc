// Fuzzes cache_store::DecodeMeta, the reader of a stored document's JSON meta; whatever it
// accepts must encode and decode back to an equal meta.
#include <string>

#include "cache_store/store/document_meta.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto meta = kvd::cache_store::DecodeMeta(std::string(kvd::fuzz::AsText(data, size)));
  if (!meta.ok()) return 0;
  auto again = kvd::cache_store::DecodeMeta(kvd::cache_store::EncodeMeta(*meta));
  kvd::fuzz::Require(again.ok(), "an encoded meta does not decode");
  kvd::fuzz::Require(*again == *meta, "a meta changes through EncodeMeta and DecodeMeta");
  return 0;
}
