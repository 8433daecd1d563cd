#include "server/core/completion_params.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "server/core/chat_system_prefix.h"
#include "server/core/completion_rules.h"
#include "server/core/keepkv_request.h"
#include "server/http/error_response.h"
#include "server/openai/completion_request_json.h"
#include "server/openai/tools_json.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

// A request's cache_salt, at most: a salt names a group of users, not a document.
constexpr size_t kMaxCacheSaltBytes = 256;
// A request's num_speculative_tokens, at most (the config's own bound).
constexpr int64_t kMaxSpeculativeTokens = 32;

// `value`, when given, into `out` if it lies in [min, max].
template <typename Value, typename Out>
absl::Status InRange(const std::optional<Value>& value, std::string_view param, Value min,
                     Value max, Out& out) {
  if (!value) return absl::OkStatus();
  if (!(*value >= min && *value <= max)) {
    const std::string name(param);
    return InvalidParam(
        param, absl::StrCat("'", name, "' must be in [", min, ", ", max, "], got ", *value));
  }
  out = static_cast<Out>(*value);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> TokenIds(const std::vector<int64_t>& ids,
                                              std::string_view param, int32_t vocab_size) {
  std::vector<int32_t> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size) {
      return InvalidParam(param, absl::StrCat("token id ", id, " in '", std::string(param),
                                              "' is outside the vocabulary of ", vocab_size));
    }
    tokens.push_back(static_cast<int32_t>(id));
  }
  return tokens;
}

absl::Status TokenizePrompts(const CompletionRequest& request, const engine::ServedModel& model,
                             bool continues_document, CompletionParams& params) {
  if (request.prompts.empty()) return InvalidParam("prompt", "'prompt' is required");
  for (const PromptInput& prompt : request.prompts) {
    if (const auto* text = std::get_if<std::string>(&prompt)) {
      // After a document the text goes on from its cache: no second BOS.
      params.prompts.push_back(model.tokenizer->Encode(*text, /*add_special=*/!continues_document));
      params.prompt_texts.push_back(*text);
      continue;
    }
    KVD_ASSIGN_OR_RETURN(
        std::vector<int32_t> tokens,
        TokenIds(std::get<std::vector<int64_t>>(prompt), "prompt", model.config->vocab_size));
    auto text = model.tokenizer->Decode(tokens, /*skip_special=*/false);
    params.prompt_texts.push_back(text.ok() ? *text : std::string());
    params.prompts.push_back(std::move(tokens));
  }
  for (const auto& tokens : params.prompts) {
    if (tokens.empty()) return InvalidParam("prompt", "a prompt has no tokens");
  }
  return absl::OkStatus();
}

// messages[0, last].
json MessagesThrough(const json& messages, int64_t last) {
  json head = json::array();
  for (int64_t i = 0; i <= last && i < static_cast<int64_t>(messages.size()); ++i) {
    head.push_back(messages[static_cast<size_t>(i)]);
  }
  return head;
}

// The template's variables beyond the messages: chat_template_kwargs, and `tools` as the
// client wrote them.
structured::JsonValue TemplateExtra(const CompletionRequest& request) {
  structured::JsonValue extra = structured::JsonValue::parse(
      request.chat_template_kwargs.dump(-1, ' ', false, json::error_handler_t::replace));
  if (!request.tools.empty()) {
    structured::JsonValue tools = structured::JsonValue::array();
    for (const ToolDefinition& tool : request.tools) tools.push_back(tool.entry);
    extra["tools"] = std::move(tools);
  }
  return extra;
}

// The prompt of `messages`; with KeepKV on (resolved before), also its protected system turns.
absl::Status RenderMessages(const CompletionRequest& request, const engine::ServedModel& model,
                            const DocumentContext* document, CompletionParams& params) {
  if (model.chat_template == nullptr) {
    return InvalidParam("messages", "this model has no chat template; use /v1/completions");
  }
  static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};
  const json& messages = request.messages;
  if (!messages.is_array() || messages.empty()) {
    return InvalidParam("messages", "'messages' must be a non-empty array");
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string param = absl::StrCat("messages[", i, "]");
    if (kRoles.count(messages[i].value("role", std::string())) == 0) {
      return InvalidParam(param + ".role", RoleRule(param));
    }
  }
  const bool add_generation_prompt = request.add_generation_prompt.value_or(true);
  const structured::JsonValue extra = TemplateExtra(request);
  const int64_t last_system = LastSystemMessage(messages);
  if (document != nullptr && document->framing == cache_store::FramingKind::kPlain) {
    return InvalidParam(
        "documents",
        "documents on this server are plain text after BOS (documents.framing: "
        "plain), which chat cannot place in a conversation; ask with /v1/completions");
  }
  // A stored document is placed in the conversation, whose one rendering must then start with
  // the document's stored prefix (checked at upload to be where every conversation's rendering
  // starts with this template); the prompt is the rest.
  auto with_document = [&](structured::JsonValue chat) -> absl::StatusOr<structured::JsonValue> {
    if (document == nullptr) return chat;
    return text::MessagesWithDocument(document->text, chat, document->role);
  };
  auto placed = with_document(TemplateMessages(messages));
  if (!placed.ok()) {
    return InvalidParam("messages", absl::StrCat("cannot place the document in this conversation: ",
                                                 std::string(placed.status().message())));
  }
  auto rendered = model.chat_template->Render(*placed, add_generation_prompt, extra);
  if (!rendered.ok()) {
    return InvalidParam("messages", absl::StrCat("the chat template refused the messages: ",
                                                 std::string(rendered.status().message())));
  }
  size_t prompt_offset = 0;
  if (document != nullptr) {
    const std::string& prefix = document->prefix.payload->prefix_text;
    if (!rendered->starts_with(prefix)) {
      return InvalidParam("messages",
                          "the conversation renders the text before the document differently from "
                          "when the document was uploaded (chat_template_kwargs change it)");
    }
    prompt_offset = prefix.size();
  }
  std::string prompt_text = rendered->substr(prompt_offset);
  params.prompts.push_back(model.tokenizer->Encode(prompt_text, /*add_special=*/false));
  params.prompt_texts.push_back(std::move(prompt_text));
  if (params.request.keepkv.has_value() && last_system >= 0) {
    // A second, shorter rendering: a template's output does not say where a turn ends.
    params.request.keepkv->protected_prefix = SystemPrefixTokens(
        messages, last_system, {*rendered, prompt_offset, params.prompts.back()}, *model.tokenizer,
        [&](int64_t last) -> absl::StatusOr<std::string> {
          KVD_ASSIGN_OR_RETURN(structured::JsonValue through,
                               with_document(TemplateMessages(MessagesThrough(messages, last))));
          return model.chat_template->Render(through, /*add_generation_prompt=*/false, extra);
        });
  }
  return absl::OkStatus();
}

absl::Status ResolveStop(const CompletionRequest& request, const engine::ServedModel& model,
                         scheduler::Request& out) {
  if (request.stop.size() > scheduler::kMaxStopStrings) return InvalidParam("stop", StopRule());
  for (const std::string& entry : request.stop) {
    if (entry.empty()) return InvalidParam("stop", "stop strings must not be empty");
  }
  out.stop = request.stop;
  KVD_ASSIGN_OR_RETURN(out.stop_token_ids, TokenIds(request.stop_token_ids, "stop_token_ids",
                                                    model.config->vocab_size));
  return absl::OkStatus();
}

absl::Status ResolveLogitBias(const CompletionRequest& request, int32_t vocab_size,
                              engine::SamplingParams& sampling) {
  for (const auto& [key, bias] : request.logit_bias) {
    int32_t token = 0;
    if (!absl::SimpleAtoi(key, &token) || token < 0 || token >= vocab_size) {
      return InvalidParam("logit_bias", absl::StrCat("logit_bias key '", key,
                                                     "' is not a token id of the vocabulary"));
    }
    if (!(bias >= -100.0 && bias <= 100.0)) return InvalidParam("logit_bias", LogitBiasRule(key));
    sampling.logit_bias.emplace_back(token, static_cast<float>(bias));
  }
  return absl::OkStatus();
}

absl::Status ResolveSampling(const CompletionRequest& request, engine::SamplingParams& sampling) {
  for (const auto& [field, value] : request.sampling) {
    const absl::Status status = engine::SetSamplingField(*field, value, sampling);
    if (!status.ok()) return InvalidParam(field->name, std::string(status.message()));
  }
  if (request.seed) sampling.seed = static_cast<uint64_t>(*request.seed);
  return absl::OkStatus();
}

// vLLM's prompt_logprobs, and OpenAI's echo with logprobs below: the scheduler scores the
// prompt with the most alternatives either asks for.
absl::Status ResolvePromptLogprobs(const CompletionRequest& request, CompletionParams& params) {
  if (!request.prompt_logprobs) return absl::OkStatus();
  int32_t alternatives = 0;
  KVD_RETURN_IF_ERROR(
      InRange<int64_t>(request.prompt_logprobs, "prompt_logprobs", 0, kMaxLogprobs, alternatives));
  params.prompt_logprobs = true;
  params.request.prompt_logprobs =
      std::max(alternatives, params.request.prompt_logprobs.value_or(0));
  return absl::OkStatus();
}

absl::Status ResolveLogprobs(const CompletionRequest& request, CompletionParams& params) {
  KVD_RETURN_IF_ERROR(ResolvePromptLogprobs(request, params));
  engine::SamplingParams& sampling = params.request.sampling;
  if (request.kind == ApiKind::kCompletion) {
    int32_t logprobs = -1;
    KVD_RETURN_IF_ERROR(InRange<int64_t>(request.logprobs, "logprobs", 0, kMaxLogprobs, logprobs));
    params.logprobs = logprobs;
    sampling.logprobs = logprobs >= 0;
    sampling.top_logprobs = std::max(0, logprobs);
    if (params.echo && logprobs >= 0) {
      // The echoed prompt's tokens come with their logprobs too (the first one has none).
      params.request.prompt_logprobs =
          std::max(logprobs, params.request.prompt_logprobs.value_or(0));
    }
    return absl::OkStatus();
  }
  params.chat_logprobs = request.chat_logprobs;
  int32_t top = 0;
  KVD_RETURN_IF_ERROR(InRange<int64_t>(request.top_logprobs, "top_logprobs", 0, kMaxLogprobs, top));
  if (top > 0 && !params.chat_logprobs) {
    return InvalidParam("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  }
  sampling.logprobs = params.chat_logprobs;
  sampling.top_logprobs = top;
  return absl::OkStatus();
}

// Refuses what an output constraint cannot be combined with: the constraint ends the output
// with end-of-sequence, which must end it.
absl::Status CheckConstraintEndsOutput(const CompletionRequest& in, const std::string& param) {
  if (in.ignore_eos)
    return InvalidParam("ignore_eos", "'ignore_eos' cannot be combined with '" + param + "'");
  if (in.min_tokens.value_or(0) > 0) {
    return InvalidParam("min_tokens", "'min_tokens' cannot be combined with '" + param + "'");
  }
  return absl::OkStatus();
}

absl::Status ResolveStructuredOutput(const CompletionRequest& in, bool constraints_available,
                                     CompletionParams& params) {
  if (!in.structured_output) return absl::OkStatus();
  const std::string& param = in.structured_output_param;
  if (!constraints_available) {
    return InvalidParam(param, "structured outputs are not available on this endpoint");
  }
  KVD_RETURN_IF_ERROR(CheckConstraintEndsOutput(in, param));
  structured::ConstraintSpec spec = *in.structured_output;
  spec.whitespace = in.json_whitespace;
  params.pending_constraint = PendingConstraint{std::move(spec), param};
  return absl::OkStatus();
}

// `tools` and `tool_choice`: whether the output is parsed for calls, and for "required" or a
// named function the constraint that makes it calls whose arguments validate.
absl::Status ResolveTools(const CompletionRequest& in,
                          std::optional<structured::ToolCallSyntax> syntax,
                          bool constraints_available, CompletionParams& params) {
  using Kind = ToolChoice::Kind;
  const ToolChoice choice =
      in.tool_choice.value_or(ToolChoice{in.tools.empty() ? Kind::kNone : Kind::kAuto, ""});
  if (in.tools.empty()) {
    if (choice.kind == Kind::kRequired || choice.kind == Kind::kFunction) {
      return InvalidParam("tool_choice", "'tool_choice' needs functions in 'tools'");
    }
    return absl::OkStatus();
  }
  if (choice.kind == Kind::kNone) return absl::OkStatus();
  params.tool_syntax = syntax;
  params.named_tool_choice = choice.kind == Kind::kFunction;
  if (choice.kind == Kind::kAuto) return absl::OkStatus();

  if (in.structured_output) {
    return InvalidParam("tool_choice", absl::StrCat("a 'tool_choice' that forces a call cannot be "
                                                    "combined with '",
                                                    in.structured_output_param, "'"));
  }
  KVD_RETURN_IF_ERROR(CheckConstraintEndsOutput(in, "tool_choice"));
  if (!constraints_available) {
    return InvalidParam("tool_choice", "structured outputs are not available on this endpoint");
  }
  structured::ToolCallGrammarSpec spec;
  spec.syntax = *syntax;
  spec.parallel = in.parallel_tool_calls && choice.kind == Kind::kRequired;
  for (const ToolDefinition& tool : in.tools) {
    if (choice.kind == Kind::kFunction && tool.name != choice.function) continue;
    spec.functions.push_back({tool.name, tool.parameters});
  }
  if (spec.functions.empty()) {
    return InvalidParam(
        "tool_choice", absl::StrCat("'tool_choice' names '", choice.function, "', not in 'tools'"));
  }
  params.pending_constraint = PendingConstraint{
      structured::ConstraintSpec{.kind = structured::ConstraintSpec::Kind::kToolCalls,
                                 .text = structured::ToolCallGrammarText(spec),
                                 .whitespace = in.json_whitespace},
      "tools"};
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckModelName(std::string_view name, const engine::ServedModel& model) {
  if (name == model.name) return absl::OkStatus();
  return WithErrorCode(WithParam(absl::NotFoundError(absl::StrCat(
                                     "the model '", std::string(name),
                                     "' does not exist; this server serves '", model.name, "'")),
                                 "model"),
                       "model_not_found");
}

absl::Status ConstraintError(const absl::Status& status, const std::string& param) {
  const std::string message = absl::StrCat("'", param, "': ", status.message());
  if (absl::IsInvalidArgument(status)) return InvalidParam(param, message);
  // Refused for load (ResourceExhausted) or shutdown (Unavailable): the same request may pass.
  return WithRetryAfter(WithParam(absl::Status(status.code(), message), param), 1);
}

absl::StatusOr<CompletionParams> ResolveCompletionParams(
    const CompletionRequest& in, const engine::ServedModel& model, const DocumentContext* document,
    const KeepKvConfig* keepkv, structured::ConstraintCache* constraints,
    std::optional<structured::ToolCallSyntax> tool_syntax) {
  KVD_ASSIGN_OR_RETURN(CompletionParams params,
                       ResolveCompletionRequest(in, model, document, keepkv, constraints != nullptr,
                                                std::move(tool_syntax)));
  if (!params.pending_constraint) return params;
  const PendingConstraint pending = *std::exchange(params.pending_constraint, std::nullopt);
  absl::StatusOr<std::shared_ptr<const structured::Constraint>> constraint =
      constraints->Get(pending.spec);
  if (!constraint.ok()) return ConstraintError(constraint.status(), pending.param);
  params.request.constraint = *std::move(constraint);
  return params;
}

absl::StatusOr<CompletionParams> ResolveCompletionRequest(
    const CompletionRequest& in, const engine::ServedModel& model, const DocumentContext* document,
    const KeepKvConfig* keepkv, bool constraints_available,
    std::optional<structured::ToolCallSyntax> tool_syntax) {
  CompletionParams params;
  params.kind = in.kind;
  params.model = in.model;
  if (params.model.empty()) return InvalidParam("model", "'model' is required");
  KVD_RETURN_IF_ERROR(CheckModelName(params.model, model));
  scheduler::Request& request = params.request;
  // The server's own bound (scheduler.max_n) is checked before this, where the scheduler is known.
  KVD_RETURN_IF_ERROR(
      InRange<int64_t>(in.n, "n", 1, std::numeric_limits<int32_t>::max(), request.n));
  params.stream = in.stream;
  params.include_usage = in.include_usage;
  KVD_ASSIGN_OR_RETURN(request.keepkv,
                       ResolveKeepKv(in.keepkv, keepkv != nullptr ? *keepkv : KeepKvConfig{}));
  if (in.kind == ApiKind::kCompletion) {
    params.echo = in.echo;
    KVD_RETURN_IF_ERROR(TokenizePrompts(in, model, document != nullptr, params));
  } else {
    if (!in.tools.empty() && !tool_syntax) {
      return InvalidParam("tools", "this model's chat template does not support tools");
    }
    KVD_RETURN_IF_ERROR(RenderMessages(in, model, document, params));
  }
  if (document != nullptr) request.document = document->prefix;
  KVD_RETURN_IF_ERROR(ResolveSampling(in, request.sampling));
  KVD_RETURN_IF_ERROR(ResolveLogitBias(in, model.config->vocab_size, request.sampling));
  KVD_RETURN_IF_ERROR(ResolveLogprobs(in, params));
  KVD_RETURN_IF_ERROR(ResolveStop(in, model, request));
  request.ignore_eos = in.ignore_eos;
  if (in.num_speculative_tokens) {
    KVD_RETURN_IF_ERROR(InRange<int64_t>(in.num_speculative_tokens, "num_speculative_tokens", 0,
                                         kMaxSpeculativeTokens,
                                         request.num_speculative_tokens.emplace()));
  }
  KVD_RETURN_IF_ERROR(ResolveStructuredOutput(in, constraints_available, params));
  KVD_RETURN_IF_ERROR(ResolveTools(in, tool_syntax, constraints_available, params));
  request.skip_special_tokens = in.skip_special_tokens.value_or(true);
  KVD_RETURN_IF_ERROR(
      InRange<int64_t>(in.priority, "priority", -1000000, 1000000, request.priority));
  params.user = in.user;
  if (in.cache_salt) {
    if (in.cache_salt->empty() || in.cache_salt->size() > kMaxCacheSaltBytes) {
      return InvalidParam("cache_salt",
                          absl::StrCat("'cache_salt' must be a non-empty string of at most ",
                                       kMaxCacheSaltBytes, " bytes, got ", in.cache_salt->size()));
    }
    request.cache_salt = *in.cache_salt;
  }

  // max_tokens: OpenAI's default is 16 for completions; chat may use the rest of the context.
  const int32_t context = model.config->max_position_embeddings;
  // A document's tokens count towards the context like the prompt's own.
  const size_t document_tokens =
      document != nullptr ? static_cast<size_t>(document->prefix.payload->original_length) : 0;
  size_t longest_prompt = 0;
  for (const auto& prompt : params.prompts) {
    longest_prompt = std::max(longest_prompt, document_tokens + prompt.size());
  }
  const bool chat = in.kind == ApiKind::kChat;
  const bool completion_tokens_given = chat && in.max_completion_tokens.has_value();
  request.max_tokens =
      chat ? std::max<int32_t>(1, context - static_cast<int32_t>(longest_prompt)) : 16;
  // max_tokens 0 scores an echoed prompt without generating (how loglikelihood evaluations ask).
  const int64_t fewest_tokens = request.prompt_logprobs && request.n == 1 ? 0 : 1;
  KVD_RETURN_IF_ERROR(
      InRange<int64_t>(completion_tokens_given ? in.max_completion_tokens : in.max_tokens,
                       completion_tokens_given ? "max_completion_tokens" : "max_tokens",
                       fewest_tokens, std::numeric_limits<int32_t>::max(), request.max_tokens));
  KVD_RETURN_IF_ERROR(
      InRange<int64_t>(in.min_tokens, "min_tokens", 0, request.max_tokens, request.min_tokens));
  if (static_cast<int64_t>(longest_prompt) + request.max_tokens > context) {
    return WithErrorCode(
        WithParam(
            absl::InvalidArgumentError(absl::StrCat(
                "this model's maximum context length is ", context, " tokens; you requested ",
                longest_prompt + request.max_tokens, " tokens (", longest_prompt, " in the ",
                chat ? "messages" : "prompt", ", ", request.max_tokens, " in the completion)")),
            chat ? "messages" : "prompt"),
        "context_length_exceeded");
  }
  return params;
}

absl::StatusOr<CompletionParams> ParseCompletionParams(const structured::JsonValue& body,
                                                       ApiKind kind,
                                                       const engine::ServedModel& model,
                                                       const DocumentContext* document,
                                                       const KeepKvConfig* keepkv) {
  KVD_ASSIGN_OR_RETURN(const CompletionRequest request, ReadCompletionRequestJson(body, kind));
  return ResolveCompletionParams(request, model, document, keepkv);
}

}  // namespace kvd::server
