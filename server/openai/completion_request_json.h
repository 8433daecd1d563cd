// The JSON body of POST /v1/completions and /v1/chat/completions read into a CompletionRequest:
// unknown keys, types and shapes checked here, values later, for both protocols at once
// (ResolveCompletionParams). Parameters of the API that kvd does not implement are refused here
// unless they hold their neutral value.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "server/core/completion_request.h"

namespace kvd::server {

// InvalidArgument with a param payload (OpenAI's `param`) for every problem. `body` is read in
// its key order (ParseJsonObjectBody<structured::JsonValue>): tools and JSON Schemas keep the
// client's.
[[nodiscard]] absl::StatusOr<CompletionRequest> ReadCompletionRequestJson(
    const structured::JsonValue& body, ApiKind kind);

// `body`'s "keepkv": absent, none (the tenant's default); null, disabled; an object of the
// keys of cache_store::kKeepKvFields a request may set (a null key counts as absent), each of
// its row's type. A `budget` in (0, 1] is a fraction of the prompt (so that 1 and 1.0, which
// many JSON writers do not tell apart, both mean the whole prompt); a larger one an integer
// token count.
[[nodiscard]] absl::StatusOr<std::optional<KeepKvRequest>> ReadKeepKvJson(
    const structured::JsonValue& body);

// `body`'s sampling parameter `name`, a row of engine::kSamplingFields (a number, an integer for
// the integer rows; absent or null: not given), appended to request.sampling when given.
[[nodiscard]] absl::Status ReadSamplingJson(const structured::JsonValue& body,
                                            std::string_view name, CompletionRequest& request);

}  // namespace kvd::server
