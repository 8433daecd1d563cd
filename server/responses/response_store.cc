#include "server/responses/response_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_details.h"
#include "text/bounded_json.h"

namespace kvd::server::responses {

using structured::JsonValue;

std::string EncodeResponseRecord(const StoredResponse& stored, int64_t expires_at) {
  const JsonValue record = {{"expires_at", expires_at},
                            {"response", stored.response},
                            {"conversation", stored.conversation}};
  return record.dump(-1, ' ', false, JsonValue::error_handler_t::replace);
}

absl::StatusOr<ResponseRecord> DecodeResponseRecord(const std::string& text,
                                                    const std::string& id) {
  auto value = text::ParseBoundedJson<JsonValue>(text, "a stored response");
  if (!value.ok() || !value->is_object() || !value->contains("expires_at") ||
      !(*value)["expires_at"].is_number_integer() || !value->contains("response") ||
      !(*value)["response"].is_object() || !value->contains("conversation") ||
      !(*value)["conversation"].is_array()) {
    return absl::InternalError("a stored response does not read back");
  }
  const JsonValue& response = (*value)["response"];
  if (!response.contains("id") || !response["id"].is_string() || response["id"] != id) {
    return absl::InternalError(absl::StrCat("the record stored as response '", id,
                                            "' is another response"));
  }
  ResponseRecord record;
  record.expires_at = (*value)["expires_at"].get<int64_t>();
  record.stored.response = std::move((*value)["response"]);
  record.stored.conversation = std::move((*value)["conversation"]);
  return record;
}

bool ResponseExpired(int64_t expires_at) {
  return absl::ToUnixSeconds(absl::Now()) >= expires_at;
}

absl::Status ResponseNotFound(const std::string& id) {
  return WithErrorCode(absl::NotFoundError(absl::StrCat("no response with id '", id, "'")),
                       "response_not_found");
}

}  // namespace kvd::server::responses
