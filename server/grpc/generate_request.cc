#include "server/grpc/generate_request.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "server/grpc/sampling_proto.h"
#include "server/http/error_response.h"
#include "server/openai/tools_json.h"
#include "text/bounded_json.h"

namespace kvd::server {
namespace {

template <typename Field>
auto OptionalOf(bool has, const Field& value) {
  using Wide = std::conditional_t<std::is_floating_point_v<Field>, double,
                                  std::conditional_t<std::is_same_v<Field, bool>, bool, int64_t>>;
  return has ? std::optional<Wide>(static_cast<Wide>(value)) : std::nullopt;
}

}  // namespace

KeepKvRequest ReadKeepKv(const v1::KeepKv& keepkv) {
  KeepKvRequest out;
  out.disabled = keepkv.disabled();
  const google::protobuf::Descriptor& descriptor = *keepkv.GetDescriptor();
  const google::protobuf::Reflection& reflection = *keepkv.GetReflection();
  for (const cache_store::KeepKvField& field : cache_store::kKeepKvFields) {
    if (!cache_store::MaySet(cache_store::KeepKvScope::kRequest, field)) continue;
    if (cache_store::ValueTypeOf(field) == cache_store::KeepKvValueType::kBudget) {
      if (keepkv.has_budget_tokens()) {
        out.settings.emplace_back(&field, cache_store::KeepKvTokenCount{keepkv.budget_tokens()});
      } else if (keepkv.has_budget_fraction()) {
        out.settings.emplace_back(&field, keepkv.budget_fraction());
      }
      continue;
    }
    const google::protobuf::FieldDescriptor* proto_field =
        descriptor.FindFieldByName(std::string(field.name));
    KVD_CHECK(proto_field != nullptr);  // generate_request_test holds KeepKv to the table
    if (!reflection.HasField(keepkv, proto_field)) continue;
    switch (proto_field->cpp_type()) {
      case google::protobuf::FieldDescriptor::CPPTYPE_INT32:
        out.settings.emplace_back(&field, int64_t{reflection.GetInt32(keepkv, proto_field)});
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE:
        out.settings.emplace_back(&field, reflection.GetDouble(keepkv, proto_field));
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_STRING:
        out.settings.emplace_back(&field, reflection.GetString(keepkv, proto_field));
        break;
      default:
        KVD_CHECK(false && "a KeepKv field is an int32, a double or a string");
    }
  }
  return out;
}

namespace {

absl::StatusOr<std::optional<structured::ConstraintSpec>> ReadStructuredOutput(
    const v1::StructuredOutput& output) {
  using Kind = structured::ConstraintSpec::Kind;
  switch (output.kind_case()) {
    case v1::StructuredOutput::kJsonSchema:
      return structured::ConstraintSpec{Kind::kJsonSchema, output.json_schema()};
    case v1::StructuredOutput::kJsonObject:
      if (!output.json_object()) {
        return WithParam(absl::InvalidArgumentError("structured_output.json_object must be true"),
                         "structured_output.json_object");
      }
      return structured::ConstraintSpec{.kind = Kind::kJsonObject};
    case v1::StructuredOutput::kRegex:
      return structured::ConstraintSpec{Kind::kRegex, output.regex()};
    case v1::StructuredOutput::kChoice: {
      nlohmann::json choices = nlohmann::json::array();
      for (const std::string& choice : output.choice().choices()) {
        if (choice.empty()) {
          return WithParam(absl::InvalidArgumentError(
                               "structured_output.choice must hold non-empty strings"),
                           "structured_output.choice");
        }
        choices.push_back(choice);
      }
      if (choices.empty()) {
        return WithParam(absl::InvalidArgumentError("structured_output.choice is empty"),
                         "structured_output.choice");
      }
      return structured::ConstraintSpec{
          Kind::kChoice, choices.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
    }
    case v1::StructuredOutput::KIND_NOT_SET:
      return std::nullopt;
  }
  return std::nullopt;
}

// A chat message as the chat template reads it, its tool fields checked as HTTP's are.
absl::StatusOr<nlohmann::json> ReadChatMessage(const v1::ChatMessage& message, size_t index) {
  nlohmann::json entry = {{"role", message.role()}, {"content", message.content()}};
  if (!message.name().empty()) entry["name"] = message.name();
  if (message.tool_calls_size() > 0) {
    nlohmann::json calls = nlohmann::json::array();
    for (const v1::ToolCall& call : message.tool_calls()) {
      calls.push_back({{"id", call.id()},
                       {"type", "function"},
                       {"function", {{"name", call.name()}, {"arguments", call.arguments()}}}});
    }
    entry["tool_calls"] = std::move(calls);
  }
  if (!message.tool_call_id().empty()) entry["tool_call_id"] = message.tool_call_id();
  KVD_RETURN_IF_ERROR(CheckMessageToolFields(entry, index));
  return entry;
}

// `tools`, `tool_choice` and `parallel_tool_calls`, checked as HTTP's are.
absl::Status ReadTools(const v1::GenerateRequest& request, CompletionRequest& out) {
  structured::JsonValue tools = structured::JsonValue::array();
  for (int i = 0; i < request.tools_size(); ++i) {
    const v1::Tool& tool = request.tools(i);
    structured::JsonValue function = {{"name", tool.name()}};
    if (!tool.description().empty()) function["description"] = tool.description();
    if (!tool.parameters_json().empty()) {
      const std::string param = absl::StrCat("tools[", i, "].parameters_json");
      auto parameters =
          text::ParseBoundedJson<structured::JsonValue>(tool.parameters_json(), param);
      if (!parameters.ok()) return WithParam(parameters.status(), param);
      function["parameters"] = *std::move(parameters);
    }
    if (tool.has_strict()) function["strict"] = tool.strict();
    tools.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  KVD_RETURN_IF_ERROR(ReadToolDefinitions(tools, out));
  using Kind = ToolChoice::Kind;
  switch (request.tool_choice().kind_case()) {
    case v1::ToolChoice::kMode: {
      const std::string& mode = request.tool_choice().mode();
      if (mode == "none") {
        out.tool_choice = ToolChoice{Kind::kNone, ""};
      } else if (mode == "auto") {
        out.tool_choice = ToolChoice{Kind::kAuto, ""};
      } else if (mode == "required") {
        out.tool_choice = ToolChoice{Kind::kRequired, ""};
      } else {
        return WithParam(
            absl::InvalidArgumentError("tool_choice.mode must be none, auto or required"),
            "tool_choice");
      }
      break;
    }
    case v1::ToolChoice::kFunction:
      out.tool_choice = ToolChoice{Kind::kFunction, request.tool_choice().function()};
      break;
    case v1::ToolChoice::KIND_NOT_SET:
      break;
  }
  if (request.has_parallel_tool_calls()) out.parallel_tool_calls = request.parallel_tool_calls();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CompletionRequest> ReadGenerateRequest(const v1::GenerateRequest& request) {
  CompletionRequest out;
  out.model = request.model();
  switch (request.input_case()) {
    case v1::GenerateRequest::kPrompt:
      out.prompts.emplace_back(request.prompt());
      break;
    case v1::GenerateRequest::kPromptTokenIds: {
      const auto& ids = request.prompt_token_ids().ids();
      out.prompts.emplace_back(std::vector<int64_t>(ids.begin(), ids.end()));
      break;
    }
    case v1::GenerateRequest::kMessages:
      out.kind = ApiKind::kChat;
      for (int i = 0; i < request.messages().messages_size(); ++i) {
        KVD_ASSIGN_OR_RETURN(nlohmann::json entry,
                             ReadChatMessage(request.messages().messages(i), i));
        out.messages.push_back(std::move(entry));
      }
      break;
    case v1::GenerateRequest::INPUT_NOT_SET:
      return WithParam(absl::InvalidArgumentError("give one of prompt, prompt_token_ids, messages"),
                       "input");
  }
  const v1::SamplingParams& s = request.sampling();
  out.sampling = ReadSamplingProto(s);
  if (s.has_seed()) out.seed = static_cast<int64_t>(s.seed());
  for (const auto& [token, bias] : s.logit_bias()) {
    out.logit_bias.emplace_back(std::to_string(token), bias);
  }
  out.max_tokens = OptionalOf(request.has_max_tokens(), request.max_tokens());
  if (request.min_tokens() != 0) out.min_tokens = request.min_tokens();
  out.n = OptionalOf(request.has_n(), request.n());
  out.stop.assign(request.stop().begin(), request.stop().end());
  out.stop_token_ids.assign(request.stop_token_ids().begin(), request.stop_token_ids().end());
  out.ignore_eos = request.ignore_eos();
  out.num_speculative_tokens =
      OptionalOf(request.has_num_speculative_tokens(), request.num_speculative_tokens());
  if (request.has_logprobs()) {
    if (out.kind == ApiKind::kChat) {
      out.chat_logprobs = true;
      out.top_logprobs = request.logprobs();
    } else {
      out.logprobs = request.logprobs();
    }
  }
  out.documents.assign(request.documents().begin(), request.documents().end());
  if (request.priority() != 0) out.priority = request.priority();
  if (request.has_cache_salt()) out.cache_salt = request.cache_salt();
  out.skip_special_tokens =
      OptionalOf(request.has_skip_special_tokens(), request.skip_special_tokens());
  out.add_generation_prompt =
      OptionalOf(request.has_add_generation_prompt(), request.add_generation_prompt());
  if (!request.chat_template_kwargs_json().empty()) {
    absl::StatusOr<nlohmann::json> kwargs =
        text::ParseBoundedJson(request.chat_template_kwargs_json(), "chat_template_kwargs_json");
    if (!kwargs.ok() || !kwargs->is_object()) {
      return WithParam(kwargs.ok() ? absl::InvalidArgumentError(
                                         "chat_template_kwargs_json must be a JSON object")
                                   : kwargs.status(),
                       "chat_template_kwargs_json");
    }
    out.chat_template_kwargs = *std::move(kwargs);
  }
  if (request.has_keepkv()) out.keepkv = ReadKeepKv(request.keepkv());
  if (request.has_structured_output()) {
    const v1::StructuredOutput& output = request.structured_output();
    absl::StatusOr<std::optional<structured::ConstraintSpec>> spec = ReadStructuredOutput(output);
    if (!spec.ok()) return spec.status();
    out.structured_output = *std::move(spec);
    if (output.any_whitespace()) out.json_whitespace = structured::JsonWhitespace::kAny;
    if (out.structured_output) {
      const std::string kind = output.GetDescriptor()
                                   ->FindFieldByNumber(static_cast<int>(output.kind_case()))
                                   ->name();
      out.structured_output_param = "structured_output." + kind;
    }
  }
  if (request.tools_size() > 0 || request.has_tool_choice() || request.has_parallel_tool_calls()) {
    if (out.kind != ApiKind::kChat) {
      return WithParam(absl::InvalidArgumentError("tools need chat messages"), "tools");
    }
    KVD_RETURN_IF_ERROR(ReadTools(request, out));
  }
  // Streaming is gRPC's own: every reply streams.
  out.stream = true;
  return out;
}

}  // namespace kvd::server
