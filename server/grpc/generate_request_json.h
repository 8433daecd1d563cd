// A gRPC GenerateRequest as the JSON body of the equivalent HTTP request, so that gRPC and
// HTTP requests are validated by the same code (api/completion_params.h): chat when it has
// messages, a completion otherwise.
#pragma once

#include "absl/status/statusor.h"
#include "kvd/v1/inference.pb.h"
#include "nlohmann/json.hpp"
#include "server/api/completion_params.h"

namespace kvd::server {

struct GenerateBody {
  nlohmann::json body;
  ApiKind kind = ApiKind::kCompletion;
};

// InvalidArgument for what JSON cannot say the same way (no input, malformed
// chat_template_kwargs_json, keepkv.disabled with other keepkv fields).
[[nodiscard]] absl::StatusOr<GenerateBody> GenerateRequestToJson(
    const v1::GenerateRequest& request);

}  // namespace kvd::server
