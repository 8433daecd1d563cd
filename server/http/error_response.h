// The one mapping from a Status to an HTTP error (and the fields a gRPC status carries): status
// code, OpenAI-style JSON body
// {"error": {"message", "type", "param", "code"}}, and Retry-After for 429. Details travel with
// the Status as payloads (base/status_details.h), so the code that finds the problem also names
// the parameter.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/status_details.h"
#include "server/http/http_message.h"

namespace kvd::server {

// 400 InvalidArgument, OutOfRange, FailedPrecondition; 401 Unauthenticated; 403
// PermissionDenied; 404 NotFound; 413 when the code is "request_too_large"; 421 for
// FailedPrecondition with code "misdirected_request"; 429 ResourceExhausted; 503 Unavailable; 504
// DeadlineExceeded; 500 otherwise.
int HttpStatusFor(const absl::Status& status);

// The error body alone (also sent in-band on an SSE stream after its 200).
std::string ErrorJson(const absl::Status& status);

HttpResponse ErrorResponse(const absl::Status& status);

// The payloads set by WithParam, WithErrorCode and WithRetryAfter, as (name, value) pairs named
// as gRPC trailers: "kvd-error-param", "kvd-error-code", "retry-after". Absent ones are left out.
std::vector<std::pair<std::string, std::string>> ErrorFields(const absl::Status& status);

}  // namespace kvd::server
