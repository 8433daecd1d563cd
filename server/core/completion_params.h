// A completion request (completion_request.h, from either protocol) checked field by field
// against what the OpenAI API allows, the served model and the tenant, and turned into
// scheduler requests: prompts tokenized, chat rendered. Every error names the parameter
// (OpenAI's `param`); parameters we do not support are refused, never ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "cache_store/kvzip/document_framing.h"
#include "engine/served_model.h"
#include "nlohmann/json.hpp"
#include "scheduler/request.h"
#include "server/config/keepkv_config.h"
#include "server/core/completion_request.h"
#include "structured/constraint_cache.h"
#include "structured/tool_call_syntax.h"
#include "text/chat_document.h"

namespace kvd::server {

// A constraint the output must follow, not compiled yet: what it is and the request parameter
// that asked for it (response_format, structured_outputs.*, guided_*, tools).
struct PendingConstraint {
  structured::ConstraintSpec spec;
  std::string param;
};

struct CompletionParams {
  ApiKind kind = ApiKind::kCompletion;
  std::string model;
  // One tokenized prompt per completions `prompt` entry; one for chat.
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::string> prompt_texts;  // their text, for `echo`
  scheduler::Request request;             // everything but the prompt
  bool stream = false;
  bool include_usage = false;    // stream_options.include_usage
  bool echo = false;             // completions: the prompt leads the text
  int32_t logprobs = -1;         // completions: top alternatives per token; -1: none
  bool chat_logprobs = false;    // chat: logprobs
  bool prompt_logprobs = false;  // vLLM's prompt_logprobs: the reply lists the prompt's
  // Chat with tools the model may call: the syntax its output is parsed with for calls.
  std::optional<structured::ToolCallSyntax> tool_syntax;
  bool named_tool_choice = false;  // tool_choice named the function: finish_reason stays "stop"
  std::string user;
  // ResolveCompletionRequest's constraint to compile into request.constraint; none once
  // compiled (ResolveCompletionParams) or when the output is free.
  std::optional<PendingConstraint> pending_constraint;
};

// A stored document the prompt continues (the request's `documents`, resolved). Completions:
// the prompt's text follows the document's cache directly (no BOS of its own). Chat, only
// under chat framing: the document opens the conversation's `role` turn
// (text/chat_document.h) and the rendering up to it must be the text the cache was
// computed from.
struct DocumentContext {
  scheduler::DocumentPrefix prefix;
  std::string text;  // the document's own text
  cache_store::FramingKind framing = cache_store::FramingKind::kChat;
  text::DocumentRole role = text::DocumentRole::kUser;
};

// NotFound (code model_not_found, param model) unless `name` is the served model's.
[[nodiscard]] absl::Status CheckModelName(std::string_view name, const engine::ServedModel& model);

// Checks `request` and builds its scheduler requests. InvalidArgument with a param payload for
// every problem; NotFound when `model` names another model. With `document`, the prompts
// continue it. `keepkv` is the tenant's KeepKV defaults (null: KeepKvConfig{}, off unless the
// request asks); a chat request with KeepKV protects its system turns
// (request.keepkv->protected_prefix). A structured output is compiled through `constraints`
// (null: structured outputs are refused), on the caller's thread. `tool_syntax` is how the
// model writes tool calls (empty: `tools` is refused).

[[nodiscard]] absl::StatusOr<CompletionParams> ResolveCompletionParams(
    const CompletionRequest& request, const engine::ServedModel& model,
    const DocumentContext* document = nullptr, const KeepKvConfig* keepkv = nullptr,
    structured::ConstraintCache* constraints = nullptr,
    std::optional<structured::ToolCallSyntax> tool_syntax = std::nullopt);

// ResolveCompletionParams up to the constraint, which it leaves in `pending_constraint` for
// the caller to compile (StartCompletion does so on the constraint compiler's threads);
// `constraints_available` false refuses structured outputs.
[[nodiscard]] absl::StatusOr<CompletionParams> ResolveCompletionRequest(
    const CompletionRequest& request, const engine::ServedModel& model,
    const DocumentContext* document, const KeepKvConfig* keepkv, bool constraints_available,
    std::optional<structured::ToolCallSyntax> tool_syntax);

// A constraint's compile error as the request's, naming `param`: InvalidArgument (a 400), or
// the refusal of a compile for load or shutdown with a retry delay (429 or 503).
[[nodiscard]] absl::Status ConstraintError(const absl::Status& status, const std::string& param);

// ReadCompletionRequestJson (completion_request_json.h) and then ResolveCompletionParams.
[[nodiscard]] absl::StatusOr<CompletionParams> ParseCompletionParams(
    const structured::JsonValue& body, ApiKind kind, const engine::ServedModel& model,
    const DocumentContext* document = nullptr, const KeepKvConfig* keepkv = nullptr);

}  // namespace kvd::server
