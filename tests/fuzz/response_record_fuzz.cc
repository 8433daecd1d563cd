// Fuzzes a stored response's record as a store reads it back (bytes from this replica's
// database or from the shared tier's Redis, which any client of that Redis may have written):
// responses::DecodeResponseRecord, then what a continuation and an input item listing do with
// the record (NormalizeItems of its conversation, InputItemsPage). Property: a record that
// decodes encodes to one that decodes to the same response and conversation.
#include "fuzz_support.h"
#include "server/responses/input_items.h"
#include "server/responses/response_store.h"
#include "server/responses/responses_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace responses = kvd::server::responses;
  const std::string text(kvd::fuzz::AsText(data, size));
  auto record = responses::DecodeResponseRecord(text, "resp_abc");
  if (!record.ok()) return 0;
  auto again = responses::DecodeResponseRecord(
      responses::EncodeResponseRecord(record->stored, record->expires_at), "resp_abc");
  if (!again.ok() || again->stored.response != record->stored.response ||
      again->stored.conversation != record->stored.conversation) {
    __builtin_trap();
  }
  (void)responses::NormalizeItems(record->stored.conversation, "previous_response_id");
  (void)responses::InputItemsPage(record->stored, "resp_abc", {});
  return 0;
}
