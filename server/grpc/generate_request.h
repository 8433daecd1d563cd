// A gRPC GenerateRequest read into the CompletionRequest an HTTP body also becomes
// (api/completion_request.h): chat when it has messages, a completion otherwise. The values
// are checked after, by the same code for both protocols (api/completion_params.h).
#pragma once

#include "absl/status/statusor.h"
#include "kvd/v1/inference.pb.h"
#include "server/core/completion_request.h"

namespace kvd::server {

// InvalidArgument for what the message's types cannot rule out: no input, or a
// chat_template_kwargs_json that is not a JSON object.
[[nodiscard]] absl::StatusOr<CompletionRequest> ReadGenerateRequest(
    const v1::GenerateRequest& request);

// KeepKv as the request's KeepKV fields: `disabled`, or the fields set (a budget as a token
// count or a fraction, as the oneof says).
KeepKvRequest ReadKeepKv(const v1::KeepKv& keepkv);

}  // namespace kvd::server
