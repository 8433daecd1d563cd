// Fuzzes cache_store::DecodeHeadProfile, the reader of a KVzip head profile file; whatever it
// accepts must encode and decode back to an equal profile, in the same bytes.
#include <string>

#include "cache_store/kvzip/head_profile.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto profile = kvd::cache_store::DecodeHeadProfile(kvd::fuzz::AsText(data, size));
  if (!profile.ok()) return 0;
  const std::string encoded = kvd::cache_store::EncodeHeadProfile(*profile);
  auto again = kvd::cache_store::DecodeHeadProfile(encoded);
  kvd::fuzz::Require(again.ok(), "an encoded profile does not decode");
  kvd::fuzz::Require(*again == *profile, "a profile changes through encoding and decoding");
  kvd::fuzz::Require(kvd::cache_store::EncodeHeadProfile(*again) == encoded,
                     "a profile's encoding is not canonical");
  return 0;
}
