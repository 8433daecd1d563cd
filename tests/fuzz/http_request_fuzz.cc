// Fuzzes server::RequestParser as a connection runs it: the input arrives in reads of a size the
// input's first byte picks, unconsumed bytes are kept and offered again, and pipelined requests
// follow one another. Properties: the buffer never outgrows what the parser allows, and no
// accepted request breaks a limit.
#include <algorithm>
#include <string>

#include "fuzz_support.h"
#include "server/http/request_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kvd::fuzz::Require;
  using kvd::server::RequestParser;
  if (size == 0) return 0;
  const size_t step = 1 + data[0] % 64;
  const std::string_view input = kvd::fuzz::AsText(data + 1, size - 1);
  // Small limits, so that the fuzzer reaches them.
  const kvd::server::RequestLimits limits{.max_header_bytes = 512, .max_body_bytes = 1024};
  std::string buffer;
  size_t offset = 0;
  while (true) {
    RequestParser parser(limits);
    RequestParser::Progress progress = RequestParser::Progress::kNeedMore;
    while (true) {
      if (!buffer.empty()) {
        size_t consumed = 0;
        progress = parser.Put(buffer, consumed);
        Require(consumed <= buffer.size(), "consumed more than offered");
        buffer.erase(0, consumed);
        if (progress != RequestParser::Progress::kNeedMore) break;
      }
      if (offset == input.size()) break;
      const size_t room = RequestParser::MaxBufferedBytes(limits) - buffer.size();
      Require(room > 0, "the buffer filled up without an error");
      const size_t take = std::min({step, room, input.size() - offset});
      buffer.append(input.substr(offset, take));
      offset += take;
    }
    if (progress == RequestParser::Progress::kFailed) {
      const int status = parser.error().status;
      Require(status == 400 || status == 413 || status == 431 || status == 501,
              "unexpected error status");
      return 0;
    }
    if (progress != RequestParser::Progress::kDone) return 0;
    const kvd::server::HttpRequest request = parser.TakeRequest();
    Require(request.body.size() <= limits.max_body_bytes, "a body over the limit accepted");
    Require(!request.method.empty(), "a request without a method");
  }
}
