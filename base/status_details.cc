#include "base/status_details.h"

#include "absl/strings/cord.h"

namespace kvd {
namespace {

constexpr char kParamUrl[] = "kvd.dev/param";
constexpr char kCodeUrl[] = "kvd.dev/code";
constexpr char kRetryAfterUrl[] = "kvd.dev/retry-after";

std::string Payload(const absl::Status& status, const char* url) {
  const auto payload = status.GetPayload(url);
  return payload ? std::string(*payload) : std::string();
}

}  // namespace

absl::Status WithParam(absl::Status status, std::string_view param) {
  status.SetPayload(kParamUrl, absl::Cord(std::string(param)));
  return status;
}

absl::Status InvalidParam(std::string_view param, std::string_view message) {
  return WithParam(absl::InvalidArgumentError(std::string(message)), param);
}

absl::Status WithErrorCode(absl::Status status, std::string_view code) {
  status.SetPayload(kCodeUrl, absl::Cord(std::string(code)));
  return status;
}

absl::Status WithRetryAfter(absl::Status status, int seconds) {
  status.SetPayload(kRetryAfterUrl, absl::Cord(std::to_string(seconds)));
  return status;
}

std::string ParamOf(const absl::Status& status) { return Payload(status, kParamUrl); }
std::string ErrorCodeOf(const absl::Status& status) { return Payload(status, kCodeUrl); }
std::string RetryAfterOf(const absl::Status& status) { return Payload(status, kRetryAfterUrl); }

}  // namespace kvd
