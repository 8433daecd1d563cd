// Details a Status carries besides its code and message, as payloads, so that the code that
// finds a problem names it where it is found and every protocol reports it the same way: the
// request parameter at fault (OpenAI's `param`), a machine-readable code, and the seconds after
// which a retry may succeed. server/http/error_response.h turns them into HTTP and gRPC fields.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace kvd {

// Attach the request parameter at fault (OpenAI's `param`).
absl::Status WithParam(absl::Status status, std::string_view param);
// An InvalidArgument saying `message` about the request parameter `param`.
absl::Status InvalidParam(std::string_view param, std::string_view message);
// Attach a machine-readable `code` (e.g. "context_length_exceeded", "rate_limit_exceeded").
absl::Status WithErrorCode(absl::Status status, std::string_view code);
// Attach the seconds after which a retry may succeed (429 and 503 get a Retry-After header).
absl::Status WithRetryAfter(absl::Status status, int seconds);

// What the functions above attached; empty when nothing was.
std::string ParamOf(const absl::Status& status);
std::string ErrorCodeOf(const absl::Status& status);
std::string RetryAfterOf(const absl::Status& status);

}  // namespace kvd
