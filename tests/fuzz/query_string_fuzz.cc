// Fuzzes server::ParseQueryString, the percent-decoding reader of URL query strings.
#include "fuzz_support.h"
#include "server/http/query_string.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)kvd::server::ParseQueryString(kvd::fuzz::AsText(data, size));
  return 0;
}
