// A request's structured-output constraint as its JSON body writes it: OpenAI's
// `response_format` (text, json_object, json_schema), vLLM's `structured_outputs` (json, regex,
// choice, json_object) and its older `guided_json` / `guided_regex` / `guided_choice`. At most
// one of them; a schema keeps the key order the client wrote (it orders the output's
// properties): the body is read as ordered JSON. `structured_outputs.disable_any_whitespace:
// false`, alone or beside a constraint, lets constrained JSON (tool calls too) be spaced freely.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "server/core/completion_request.h"

namespace kvd::server {

// The body keys this reader owns.
inline constexpr std::string_view kStructuredOutputKeys[] = {
    "response_format", "structured_outputs", "guided_json",
    "guided_regex",    "guided_choice",      "guided_grammar"};

// Fills request.structured_output (and its param) and request.json_whitespace from `body`.
// InvalidArgument with a param payload.
[[nodiscard]] absl::Status ReadStructuredOutputJson(const structured::JsonValue& body,
                                                    CompletionRequest& request);

}  // namespace kvd::server
