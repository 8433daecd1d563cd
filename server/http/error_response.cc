#include "server/http/error_response.h"

#include "absl/strings/cord.h"
#include "nlohmann/json.hpp"

namespace kvd::server {
namespace {

constexpr char kParamUrl[] = "kvd.dev/param";
constexpr char kCodeUrl[] = "kvd.dev/code";
constexpr char kRetryAfterUrl[] = "kvd.dev/retry-after";

std::string Payload(const absl::Status& status, const char* url) {
  const auto payload = status.GetPayload(url);
  return payload ? std::string(*payload) : std::string();
}

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

absl::Status WithParam(absl::Status status, std::string_view param) {
  status.SetPayload(kParamUrl, absl::Cord(std::string(param)));
  return status;
}

absl::Status WithErrorCode(absl::Status status, std::string_view code) {
  status.SetPayload(kCodeUrl, absl::Cord(std::string(code)));
  return status;
}

absl::Status WithRetryAfter(absl::Status status, int seconds) {
  status.SetPayload(kRetryAfterUrl, absl::Cord(std::to_string(seconds)));
  return status;
}

int HttpStatusFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition: {
      const std::string code = Payload(status, kCodeUrl);
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
  const std::string param = Payload(status, kParamUrl);
  const std::string code = Payload(status, kCodeUrl);
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
  const std::string retry_after = Payload(status, kRetryAfterUrl);
  if (!retry_after.empty()) response.headers.emplace_back("Retry-After", retry_after);
  return response;
}

std::vector<std::pair<std::string, std::string>> ErrorFields(const absl::Status& status) {
  std::vector<std::pair<std::string, std::string>> fields;
  for (const auto& [name, url] :
       {std::pair{"kvd-error-param", kParamUrl}, std::pair{"kvd-error-code", kCodeUrl},
        std::pair{"retry-after", kRetryAfterUrl}}) {
    std::string value = Payload(status, url);
    if (!value.empty()) fields.emplace_back(name, std::move(value));
  }
  return fields;
}

}  // namespace kvd::server
