// Fuzzes server::ParseQueryString, the percent-decoding reader of URL query strings, and what
// reads its parameters: the input items' page query, paged over a small stored conversation.
#include "fuzz_support.h"
#include "server/http/query_string.h"
#include "server/responses/input_items.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto params = kvd::server::ParseQueryString(kvd::fuzz::AsText(data, size));
  if (!params.ok()) return 0;
  auto query = kvd::server::responses::ReadInputItemsQuery(*params);
  if (!query.ok()) return 0;
  static const kvd::server::responses::StoredResponse stored{
      .response = kvd::structured::JsonValue::parse(R"({"output": [{"type": "message"}]})"),
      .conversation = kvd::structured::JsonValue::parse(
          R"([{"type": "message", "role": "user", "content": "hi"},
              {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
              {"type": "function_call_output", "call_id": "c", "output": "x"},
              {"type": "message", "role": "assistant", "content": "ok"}])")};
  (void)kvd::server::responses::InputItemsPage(stored, "resp_abc", *query);
  return 0;
}
