// The one mapping of kvd's statuses to gRPC's: the same code (absl's codes are gRPC's), the
// message, and what the HTTP API sends as headers and error fields as trailing metadata:
// `retry-after` (seconds), `kvd-error-param`, `kvd-error-code`.
#pragma once

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"

namespace kvd::server {

// Converts `status`, adding its metadata to `context`'s trailers.
grpc::Status ToGrpcStatus(const absl::Status& status, grpc::ServerContextBase& context);

// Finishes a unary call with `status` (its response already filled when OK).
grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* call,
                                      const absl::Status& status);

}  // namespace kvd::server
