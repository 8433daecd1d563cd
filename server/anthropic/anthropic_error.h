// Errors on Anthropic's routes in Anthropic's shape: {"type": "error", "error": {"type",
// "message"}}, with the HTTP status (and Retry-After) that every other route gives the same
// Status (server/http/error_response.h); in a stream, an `error` event.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "server/http/http_message.h"

namespace kvd::server::anthropic {

// Anthropic's error type for an HTTP status: invalid_request_error, authentication_error,
// permission_error, not_found_error, request_too_large, rate_limit_error, overloaded_error,
// api_error.
std::string ErrorType(int http_status);

std::string ErrorBody(const absl::Status& status);

HttpResponse ErrorResponse(const absl::Status& status);

// One server-sent event: "event: <name>\ndata: <json>\n\n".
std::string SseEvent(std::string_view name, const std::string& json_text);

}  // namespace kvd::server::anthropic
