#include "server/openai/completion_request_json.h"

#include <cstdint>
#include <initializer_list>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "server/core/completion_rules.h"
#include "server/http/error_response.h"
#include "server/openai/openai_json.h"
#include "server/openai/structured_output_json.h"
#include "server/openai/tools_json.h"

namespace kvd::server {
namespace {

// The body as read: ordered, so that tools and schemas keep the client's key order.
using structured::JsonValue;

// `keys` with `owned`, the keys a sub-reader owns.
std::set<std::string> KeysWith(std::initializer_list<std::string_view> keys,
                               std::span<const std::string_view> owned) {
  std::set<std::string> all(keys.begin(), keys.end());
  all.insert(owned.begin(), owned.end());
  return all;
}

const std::set<std::string>& CommonKeys() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> all = KeysWith({"model",
                                          "max_tokens",
                                          "n",
                                          "seed",
                                          "stop",
                                          "stop_token_ids",
                                          "logit_bias",
                                          "logprobs",
                                          "prompt_logprobs",
                                          "ignore_eos",
                                          "min_tokens",
                                          "num_speculative_tokens",
                                          "user",
                                          "stream",
                                          "stream_options",
                                          "priority",
                                          "cache_salt",
                                          "documents",
                                          "skip_special_tokens",
                                          "keepkv"},
                                         kStructuredOutputKeys);
    for (const engine::SamplingField& field : engine::kSamplingFields) all.emplace(field.name);
    return all;
  }();
  return keys;
}
const std::set<std::string>& CompletionKeys() {
  static const std::set<std::string> keys = {"prompt", "echo", "best_of", "suffix"};
  return keys;
}
const std::set<std::string>& ChatKeys() {
  static const std::set<std::string> keys =
      KeysWith({"messages", "max_completion_tokens", "top_logprobs", "add_generation_prompt",
                "chat_template_kwargs"},
               kToolKeys);
  return keys;
}

// An integer JSON value as int64_t, the largest ones clamped (parsed non-negative integers are
// unsigned), so that a range check refuses them.
int64_t IntegerOf(const JsonValue& value) {
  if (!value.is_number_unsigned()) return value.get<int64_t>();
  return value.get<uint64_t>() > uint64_t{INT64_MAX} ? INT64_MAX
                                                     : static_cast<int64_t>(value.get<uint64_t>());
}

// Typed access to an object's fields: absent and null read as "not given". `prefix` names
// the object in params ("keepkv." for its keys).
class Fields {
 public:
  Fields(const JsonValue& object, std::string prefix = "")
      : object_(object), prefix_(std::move(prefix)) {}

  const JsonValue* Get(const std::string& key) const {
    const auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }

  absl::Status Number(const std::string& key, std::optional<double>& out) const {
    const JsonValue* value = Get(key);
    if (value == nullptr) return absl::OkStatus();
    if (!value->is_number()) return Mistyped(key, "a number", *value);
    out = value->get<double>();
    return absl::OkStatus();
  }

  absl::Status Integer(const std::string& key, std::optional<int64_t>& out) const {
    const JsonValue* value = Get(key);
    if (value == nullptr) return absl::OkStatus();
    if (!value->is_number_integer()) return Mistyped(key, "an integer", *value);
    out = IntegerOf(*value);
    return absl::OkStatus();
  }

  absl::Status Boolean(const std::string& key, bool& out) const {
    const JsonValue* value = Get(key);
    if (value == nullptr) return absl::OkStatus();
    if (!value->is_boolean()) return Mistyped(key, "a boolean", *value);
    out = value->get<bool>();
    return absl::OkStatus();
  }

  absl::Status Boolean(const std::string& key, std::optional<bool>& out) const {
    bool given = false;
    if (Get(key) == nullptr) return absl::OkStatus();
    KVD_RETURN_IF_ERROR(Boolean(key, given));
    out = given;
    return absl::OkStatus();
  }

  absl::Status String(const std::string& key, std::string& out) const {
    const JsonValue* value = Get(key);
    if (value == nullptr) return absl::OkStatus();
    if (!value->is_string()) return Mistyped(key, "a string", *value);
    out = value->get<std::string>();
    return absl::OkStatus();
  }

 private:
  absl::Status Mistyped(const std::string& key, std::string_view type,
                        const JsonValue& value) const {
    const std::string param = prefix_ + key;
    return InvalidParam(param, absl::StrCat("'", param, "' must be ", std::string(type), ", got ",
                                            std::string(value.type_name())));
  }

  const JsonValue& object_;
  std::string prefix_;
};

absl::Status CheckKeys(const JsonValue& body, ApiKind kind) {
  const auto& own = kind == ApiKind::kChat ? ChatKeys() : CompletionKeys();
  for (const auto& [key, value] : body.items()) {
    if (CommonKeys().count(key) == 0 && own.count(key) == 0) {
      return InvalidParam(key, absl::StrCat("unsupported parameter '", key, "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status ReadTokenIds(const JsonValue& array, std::string_view param,
                          std::vector<int64_t>& out) {
  for (const JsonValue& id : array) {
    if (!id.is_number_integer()) {
      return InvalidParam(param,
                          absl::StrCat("'", std::string(param), "' token ids must be integers"));
    }
    out.push_back(IntegerOf(id));
  }
  return absl::OkStatus();
}

// `prompt`: a string, strings, token ids, or lists of token ids.
absl::Status ReadPrompts(const JsonValue& body, CompletionRequest& request) {
  const auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) return InvalidParam("prompt", "'prompt' is required");
  const JsonValue& prompt = *it;
  auto add_ids = [&](const JsonValue& ids) -> absl::Status {
    std::vector<int64_t> tokens;
    KVD_RETURN_IF_ERROR(ReadTokenIds(ids, "prompt", tokens));
    request.prompts.emplace_back(std::move(tokens));
    return absl::OkStatus();
  };
  if (prompt.is_string()) {
    request.prompts.emplace_back(prompt.get<std::string>());
    return absl::OkStatus();
  }
  if (!prompt.is_array() || prompt.empty()) {
    return InvalidParam(
        "prompt", "'prompt' must be a non-empty string, array of strings or array of token ids");
  }
  if (prompt.front().is_number_integer()) return add_ids(prompt);
  for (const JsonValue& entry : prompt) {
    if (entry.is_string()) {
      request.prompts.emplace_back(entry.get<std::string>());
    } else if (entry.is_array() && !entry.empty()) {
      KVD_RETURN_IF_ERROR(add_ids(entry));
    } else {
      return InvalidParam(
          "prompt",
          "'prompt' must be a string, an array of strings, an array of token ids, or "
          "an array of arrays of token ids");
    }
  }
  return absl::OkStatus();
}

// A message's content: a string, or text parts joined.
absl::StatusOr<std::string> MessageText(const JsonValue& content, size_t index) {
  const std::string param = absl::StrCat("messages[", index, "].content");
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return std::string();
  if (!content.is_array()) {
    return InvalidParam(param, absl::StrCat("'", param, "' must be a string or an array of parts"));
  }
  std::string text;
  for (const JsonValue& part : content) {
    if (!StringFieldIs(part, "type", "text") || !part.contains("text") ||
        !part["text"].is_string()) {
      return InvalidParam(param,
                          absl::StrCat("'", param,
                                       "' supports only parts of type \"text\" with a string "
                                       "\"text\""));
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

absl::Status ReadMessages(const JsonValue& body, CompletionRequest& request) {
  const auto it = body.find("messages");
  if (it == body.end() || !it->is_array() || it->empty()) {
    return InvalidParam("messages", "'messages' must be a non-empty array");
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const JsonValue& message = (*it)[i];
    const std::string param = absl::StrCat("messages[", i, "]");
    if (!message.is_object()) {
      return InvalidParam(param, absl::StrCat("'", param, "' must be an object"));
    }
    const auto role = message.find("role");
    if (role == message.end() || !role->is_string()) {
      return InvalidParam(param + ".role", RoleRule(param));
    }
    KVD_RETURN_IF_ERROR(CheckMessageToolFields(message, i));
    nlohmann::json normalized(message);
    KVD_ASSIGN_OR_RETURN(
        normalized["content"],
        MessageText(message.contains("content") ? message["content"] : JsonValue(), i));
    request.messages.push_back(std::move(normalized));
  }
  const Fields fields(body);
  KVD_RETURN_IF_ERROR(fields.Boolean("add_generation_prompt", request.add_generation_prompt));
  if (const JsonValue* kwargs = fields.Get("chat_template_kwargs")) {
    if (!kwargs->is_object()) {
      return InvalidParam("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    }
    request.chat_template_kwargs = nlohmann::json(*kwargs);
  }
  return absl::OkStatus();
}

absl::Status ReadStop(const Fields& fields, CompletionRequest& request) {
  if (const JsonValue* stop = fields.Get("stop")) {
    if (stop->is_string()) {
      request.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (const JsonValue& entry : *stop) {
        if (!entry.is_string()) return InvalidParam("stop", "'stop' must hold strings");
        request.stop.push_back(entry.get<std::string>());
      }
    } else {
      return InvalidParam("stop", StopRule());
    }
  }
  if (const JsonValue* ids = fields.Get("stop_token_ids")) {
    if (!ids->is_array())
      return InvalidParam("stop_token_ids", "'stop_token_ids' must be an array");
    KVD_RETURN_IF_ERROR(ReadTokenIds(*ids, "stop_token_ids", request.stop_token_ids));
  }
  return absl::OkStatus();
}

absl::Status ReadLogitBias(const Fields& fields, CompletionRequest& request) {
  const JsonValue* bias = fields.Get("logit_bias");
  if (bias == nullptr) return absl::OkStatus();
  if (!bias->is_object()) return InvalidParam("logit_bias", "'logit_bias' must be an object");
  for (const auto& [key, value] : bias->items()) {
    if (!value.is_number()) {
      return InvalidParam("logit_bias", LogitBiasRule(key));
    }
    request.logit_bias.emplace_back(key, value.get<double>());
  }
  return absl::OkStatus();
}

absl::Status ReadSampling(const JsonValue& body, const Fields& fields, CompletionRequest& request) {
  for (const engine::SamplingField& field : engine::kSamplingFields) {
    KVD_RETURN_IF_ERROR(ReadSamplingJson(body, field.name, request));
  }
  KVD_RETURN_IF_ERROR(fields.Integer("seed", request.seed));
  return ReadLogitBias(fields, request);
}

absl::Status ReadLogprobs(const Fields& fields, ApiKind kind, CompletionRequest& request) {
  KVD_RETURN_IF_ERROR(fields.Integer("prompt_logprobs", request.prompt_logprobs));
  if (kind == ApiKind::kCompletion) return fields.Integer("logprobs", request.logprobs);
  KVD_RETURN_IF_ERROR(fields.Boolean("logprobs", request.chat_logprobs));
  return fields.Integer("top_logprobs", request.top_logprobs);
}

absl::Status ReadStreamOptions(const Fields& fields, CompletionRequest& request) {
  KVD_RETURN_IF_ERROR(fields.Boolean("stream", request.stream));
  const JsonValue* options = fields.Get("stream_options");
  if (options == nullptr) return absl::OkStatus();
  if (!request.stream) {
    return InvalidParam("stream_options", "'stream_options' is only allowed when 'stream' is true");
  }
  if (!options->is_object())
    return InvalidParam("stream_options", "'stream_options' must be an object");
  for (const auto& [key, value] : options->items()) {
    if (key != "include_usage" && key != "continuous_usage_stats") {
      return InvalidParam("stream_options", absl::StrCat("unsupported stream option '", key, "'"));
    }
  }
  const JsonValue& usage = options->value("include_usage", JsonValue(false));
  if (!usage.is_boolean()) {
    return InvalidParam("stream_options", "'stream_options.include_usage' must be a boolean");
  }
  request.include_usage = usage.get<bool>();
  return absl::OkStatus();
}

absl::Status ReadDocuments(const Fields& fields, CompletionRequest& request) {
  const JsonValue* documents = fields.Get("documents");
  if (documents == nullptr) return absl::OkStatus();
  if (!documents->is_array()) return InvalidParam("documents", DocumentsRule());
  for (const JsonValue& id : *documents) {
    if (!id.is_string()) return InvalidParam("documents", DocumentsRule());
    request.documents.push_back(id.get<std::string>());
  }
  return absl::OkStatus();
}

// Parameters of the API kvd does not implement: accepted only at their neutral values.
absl::Status RefuseUnsupported(const Fields& fields, ApiKind kind,
                               const CompletionRequest& request) {
  if (kind == ApiKind::kCompletion) {
    if (const JsonValue* best_of = fields.Get("best_of")) {
      if (!best_of->is_number_integer() || IntegerOf(*best_of) != request.n.value_or(1)) {
        return InvalidParam("best_of", "'best_of' other than n is not supported");
      }
    }
    if (fields.Get("suffix") != nullptr) return InvalidParam("suffix", "'suffix' is not supported");
  }
  return absl::OkStatus();
}

// The value of a KeepKV row as the JSON `value` writes it, when its type fits the row's.
absl::StatusOr<cache_store::KeepKvValue> KeepKvValueOf(const cache_store::KeepKvField& field,
                                                       const JsonValue& value) {
  const std::string param = "keepkv." + std::string(field.name);
  auto mistyped = [&](std::string_view type) {
    return InvalidParam(param, absl::StrCat("'", param, "' must be ", std::string(type), ", got ",
                                            std::string(value.type_name())));
  };
  switch (cache_store::ValueTypeOf(field)) {
    case cache_store::KeepKvValueType::kBudget:
      if (!value.is_number()) {
        return mistyped("a positive token count or a fraction in (0, 1]");
      }
      break;
    case cache_store::KeepKvValueType::kNumber:
      if (!value.is_number()) return mistyped("a number");
      break;
    case cache_store::KeepKvValueType::kInteger:
      if (!value.is_number_integer()) return mistyped("an integer");
      break;
    case cache_store::KeepKvValueType::kName:
      if (!value.is_string()) return mistyped("a string");
      return value.get<std::string>();
  }
  if (value.is_number_integer()) return IntegerOf(value);
  return value.get<double>();
}

}  // namespace

absl::Status ReadSamplingJson(const JsonValue& body, std::string_view name,
                              CompletionRequest& request) {
  const engine::SamplingField* field = engine::FindSamplingField(name);
  KVD_CHECK(field != nullptr);
  const Fields fields(body);
  const std::string key(name);
  if (engine::IsInteger(*field)) {
    std::optional<int64_t> value;
    KVD_RETURN_IF_ERROR(fields.Integer(key, value));
    if (value) request.sampling.emplace_back(field, static_cast<double>(*value));
  } else {
    std::optional<double> value;
    KVD_RETURN_IF_ERROR(fields.Number(key, value));
    if (value) request.sampling.emplace_back(field, *value);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<KeepKvRequest>> ReadKeepKvJson(const JsonValue& body) {
  const auto it = body.find("keepkv");
  if (it == body.end()) return std::nullopt;
  KeepKvRequest keepkv;
  if (it->is_null()) {
    keepkv.disabled = true;
    return keepkv;
  }
  if (!it->is_object()) {
    return InvalidParam("keepkv", absl::StrCat("'keepkv' must be an object or null, got ",
                                               std::string(it->type_name())));
  }
  for (const auto& [key, value] : it->items()) {
    const cache_store::KeepKvField* field = cache_store::FindKeepKvField(key);
    if (field == nullptr || !cache_store::MaySet(cache_store::KeepKvScope::kRequest, *field)) {
      return InvalidParam(
          "keepkv." + key,
          absl::StrCat("unsupported parameter 'keepkv.", key, "' (keepkv takes ",
                       cache_store::KeepKvKeys(cache_store::KeepKvScope::kRequest), ")"));
    }
    if (value.is_null()) continue;  // the default
    KVD_ASSIGN_OR_RETURN(cache_store::KeepKvValue given, KeepKvValueOf(*field, value));
    keepkv.settings.emplace_back(field, std::move(given));
  }
  return keepkv;
}

absl::StatusOr<CompletionRequest> ReadCompletionRequestJson(const JsonValue& body, ApiKind kind) {
  if (!body.is_object()) {
    return absl::InvalidArgumentError("the request body must be a JSON object");
  }
  KVD_RETURN_IF_ERROR(CheckKeys(body, kind));
  const Fields fields(body);
  CompletionRequest request;
  request.kind = kind;
  KVD_RETURN_IF_ERROR(fields.String("model", request.model));
  KVD_RETURN_IF_ERROR(fields.Integer("n", request.n));
  KVD_RETURN_IF_ERROR(RefuseUnsupported(fields, kind, request));
  KVD_RETURN_IF_ERROR(ReadStreamOptions(fields, request));
  KVD_ASSIGN_OR_RETURN(request.keepkv, ReadKeepKvJson(body));
  if (kind == ApiKind::kCompletion) {
    KVD_RETURN_IF_ERROR(fields.Boolean("echo", request.echo));
    KVD_RETURN_IF_ERROR(ReadPrompts(body, request));
  } else {
    KVD_RETURN_IF_ERROR(ReadMessages(body, request));
    KVD_RETURN_IF_ERROR(ReadToolsJson(body, request));
    KVD_RETURN_IF_ERROR(fields.Integer("max_completion_tokens", request.max_completion_tokens));
  }
  KVD_RETURN_IF_ERROR(ReadDocuments(fields, request));
  KVD_RETURN_IF_ERROR(ReadStructuredOutputJson(body, request));
  KVD_RETURN_IF_ERROR(ReadSampling(body, fields, request));
  KVD_RETURN_IF_ERROR(ReadLogprobs(fields, kind, request));
  KVD_RETURN_IF_ERROR(ReadStop(fields, request));
  KVD_RETURN_IF_ERROR(fields.Boolean("ignore_eos", request.ignore_eos));
  KVD_RETURN_IF_ERROR(fields.Integer("num_speculative_tokens", request.num_speculative_tokens));
  KVD_RETURN_IF_ERROR(fields.Boolean("skip_special_tokens", request.skip_special_tokens));
  KVD_RETURN_IF_ERROR(fields.Integer("priority", request.priority));
  KVD_RETURN_IF_ERROR(fields.String("user", request.user));
  if (fields.Get("cache_salt") != nullptr) {
    KVD_RETURN_IF_ERROR(fields.String("cache_salt", request.cache_salt.emplace()));
  }
  KVD_RETURN_IF_ERROR(fields.Integer("max_tokens", request.max_tokens));
  KVD_RETURN_IF_ERROR(fields.Integer("min_tokens", request.min_tokens));
  return request;
}

}  // namespace kvd::server
