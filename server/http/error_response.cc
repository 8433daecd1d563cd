#include "server/http/error_response.h"

#include "nlohmann/json.hpp"

namespace kvd::server {
namespace {

// OpenAI's error `type` strings by HTTP status.
const char* ErrorType(int http_status) {
  switch (http_status) {
    case 400:
    case 413:
    case 421:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 429:
      return "rate_limit_error";
    case 503:
      return "service_unavailable_error";
    case 504:
      return "timeout_error";
    default:
      return "server_error";
  }
}

}  // namespace

int HttpStatusFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition: {
      const std::string code = ErrorCodeOf(status);
      if (code == "request_too_large") return 413;
      return code == "misdirected_request" ? 421 : 400;
    }
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

std::string ErrorJson(const absl::Status& status) {
  const std::string param = ParamOf(status);
  const std::string code = ErrorCodeOf(status);
  nlohmann::json error = {{"message", std::string(status.message())},
                          {"type", ErrorType(HttpStatusFor(status))},
                          {"param", param.empty() ? nlohmann::json() : nlohmann::json(param)},
                          {"code", code.empty() ? nlohmann::json() : nlohmann::json(code)}};
  return nlohmann::json{{"error", std::move(error)}}.dump(-1, ' ', false,
                                                          nlohmann::json::error_handler_t::replace);
}

HttpResponse ErrorResponse(const absl::Status& status) {
  HttpResponse response;
  response.status = HttpStatusFor(status);
  response.body = ErrorJson(status);
  const std::string retry_after = RetryAfterOf(status);
  if (!retry_after.empty()) response.headers.emplace_back("Retry-After", retry_after);
  return response;
}

std::vector<std::pair<std::string, std::string>> ErrorFields(const absl::Status& status) {
  std::vector<std::pair<std::string, std::string>> fields;
  for (auto [name, value] : {std::pair{"kvd-error-param", ParamOf(status)},
                             std::pair{"kvd-error-code", ErrorCodeOf(status)},
                             std::pair{"retry-after", RetryAfterOf(status)}}) {
    if (!value.empty()) fields.emplace_back(name, std::move(value));
  }
  return fields;
}

}  // namespace kvd::server
