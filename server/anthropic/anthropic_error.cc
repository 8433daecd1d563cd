#include "server/anthropic/anthropic_error.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "server/http/error_response.h"
#include "server/openai/openai_json.h"

namespace kvd::server::anthropic {

std::string ErrorType(int http_status) {
  switch (http_status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
      return "overloaded_error";
    default:
      return http_status >= 400 && http_status < 500 ? "invalid_request_error" : "api_error";
  }
}

std::string ErrorBody(const absl::Status& status) {
  return Dump(
      {{"type", "error"},
       {"error",
        {{"type", ErrorType(HttpStatusFor(status))}, {"message", std::string(status.message())}}}});
}

HttpResponse ErrorResponse(const absl::Status& status) {
  HttpResponse response = server::ErrorResponse(status);
  response.body = ErrorBody(status);
  return response;
}

std::string SseEvent(std::string_view name, const std::string& json_text) {
  return absl::StrCat("event: ", std::string(name), "\ndata: ", json_text, "\n\n");
}

}  // namespace kvd::server::anthropic
