// Fuzzes server::ParseByteSize ("512MiB", "1GB", "100"); any size it gives, written as a plain
// number of bytes, must parse back to itself.
#include <string>

#include "fuzz_support.h"
#include "server/config/byte_size.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = kvd::server::ParseByteSize(kvd::fuzz::AsText(data, size));
  if (!bytes.ok()) return 0;
  auto again = kvd::server::ParseByteSize(std::to_string(*bytes));
  kvd::fuzz::Require(again.ok() && *again == *bytes, "a parsed size does not parse back");
  return 0;
}
