#include "server/api/completion_params.h"

#include <cmath>
#include <limits>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "server/api/chat_system_prefix.h"
#include "server/api/keepkv_request.h"
#include "server/api/openai_json.h"
#include "server/http/error_response.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

constexpr int32_t kMaxStopStrings = 16;
constexpr int32_t kMaxLogprobs = 20;

const std::set<std::string>& CommonKeys() {
  static const std::set<std::string> keys = {"model",
                                             "max_tokens",
                                             "temperature",
                                             "top_p",
                                             "top_k",
                                             "min_p",
                                             "n",
                                             "seed",
                                             "stop",
                                             "stop_token_ids",
                                             "presence_penalty",
                                             "frequency_penalty",
                                             "repetition_penalty",
                                             "logit_bias",
                                             "logprobs",
                                             "ignore_eos",
                                             "min_tokens",
                                             "user",
                                             "stream",
                                             "stream_options",
                                             "priority",
                                             "documents",
                                             "skip_special_tokens",
                                             "keepkv"};
  return keys;
}
const std::set<std::string>& CompletionKeys() {
  static const std::set<std::string> keys = {"prompt", "echo", "best_of", "suffix"};
  return keys;
}
const std::set<std::string>& ChatKeys() {
  static const std::set<std::string> keys = {"messages",
                                             "max_completion_tokens",
                                             "top_logprobs",
                                             "add_generation_prompt",
                                             "chat_template_kwargs",
                                             "tools",
                                             "tool_choice",
                                             "response_format"};
  return keys;
}

absl::Status Invalid(std::string_view param, std::string message) {
  return WithParam(absl::InvalidArgumentError(std::move(message)), param);
}

std::string TypeName(const json& value) { return value.type_name(); }

// Typed access to the body's fields: absent and null read as "not given".
class Fields {
 public:
  explicit Fields(const json& body) : body_(body) {}

  const json* Get(const std::string& key) const {
    const auto it = body_.find(key);
    return it == body_.end() || it->is_null() ? nullptr : &*it;
  }

  absl::Status Number(const std::string& key, double min, double max, float& out) const {
    const json* value = Get(key);
    if (value == nullptr) return absl::OkStatus();
    if (!value->is_number()) {
      return Invalid(key, absl::StrCat("'", key, "' must be a number, got ", TypeName(*value)));
    }
    const double number = value->get<double>();
    if (!(number >= min && number <= max)) {
      return Invalid(key,
                     absl::StrCat("'", key, "' must be in [", min, ", ", max, "], got ", number));
    }
    out = static_cast<float>(number);
    return absl::OkStatus();
  }

  absl::Status Integer(const std::string& key, int64_t min, int64_t max, int64_t& out) const {
    const json* value = Get(key);
    if (value == nullptr) return absl::OkStatus();
    if (!value->is_number_integer()) {
      return Invalid(key, absl::StrCat("'", key, "' must be an integer, got ", TypeName(*value)));
    }
    const int64_t number =
        value->is_number_unsigned() && value->get<uint64_t>() > uint64_t{INT64_MAX}
            ? INT64_MAX
            : value->get<int64_t>();
    if (number < min || number > max) {
      return Invalid(key,
                     absl::StrCat("'", key, "' must be in [", min, ", ", max, "], got ", number));
    }
    out = number;
    return absl::OkStatus();
  }

  absl::Status Integer32(const std::string& key, int64_t min, int64_t max, int32_t& out) const {
    int64_t wide = out;
    if (auto status = Integer(key, min, max, wide); !status.ok()) return status;
    out = static_cast<int32_t>(wide);
    return absl::OkStatus();
  }

  absl::Status Boolean(const std::string& key, bool& out) const {
    const json* value = Get(key);
    if (value == nullptr) return absl::OkStatus();
    if (!value->is_boolean()) {
      return Invalid(key, absl::StrCat("'", key, "' must be a boolean, got ", TypeName(*value)));
    }
    out = value->get<bool>();
    return absl::OkStatus();
  }

  absl::Status String(const std::string& key, std::string& out) const {
    const json* value = Get(key);
    if (value == nullptr) return absl::OkStatus();
    if (!value->is_string()) {
      return Invalid(key, absl::StrCat("'", key, "' must be a string, got ", TypeName(*value)));
    }
    out = value->get<std::string>();
    return absl::OkStatus();
  }

 private:
  const json& body_;
};

absl::Status CheckKeys(const json& body, ApiKind kind) {
  const auto& own = kind == ApiKind::kChat ? ChatKeys() : CompletionKeys();
  for (const auto& [key, value] : body.items()) {
    if (CommonKeys().count(key) == 0 && own.count(key) == 0) {
      return Invalid(key, absl::StrCat("unsupported parameter '", key, "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseTokenIds(const json& array, std::string_view param, int32_t vocab_size,
                           std::vector<int32_t>& out) {
  for (const json& id : array) {
    if (!id.is_number_integer()) {
      return Invalid(param, absl::StrCat("'", std::string(param), "' token ids must be integers"));
    }
    const int64_t value = id.get<int64_t>();
    if (value < 0 || value >= vocab_size) {
      return Invalid(param, absl::StrCat("token id ", value, " in '", std::string(param),
                                         "' is outside the vocabulary of ", vocab_size));
    }
    out.push_back(static_cast<int32_t>(value));
  }
  return absl::OkStatus();
}

// `prompt`: a string, strings, token ids, or lists of token ids.
absl::Status ParsePrompts(const json& body, const ModelInfo& model, bool continues_document,
                          CompletionParams& params) {
  const auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) return Invalid("prompt", "'prompt' is required");
  const json& prompt = *it;
  const int32_t vocab = model.config->vocab_size;
  auto add_text = [&](const std::string& text) {
    // After a document the text goes on from its cache: no second BOS.
    params.prompts.push_back(model.tokenizer->Encode(text, /*add_special=*/!continues_document));
    params.prompt_texts.push_back(text);
  };
  auto add_ids = [&](const json& ids) -> absl::Status {
    std::vector<int32_t> tokens;
    KVD_RETURN_IF_ERROR(ParseTokenIds(ids, "prompt", vocab, tokens));
    auto text = model.tokenizer->Decode(tokens, /*skip_special=*/false);
    params.prompt_texts.push_back(text.ok() ? *text : std::string());
    params.prompts.push_back(std::move(tokens));
    return absl::OkStatus();
  };
  if (prompt.is_string()) {
    add_text(prompt.get<std::string>());
  } else if (prompt.is_array() && !prompt.empty()) {
    if (prompt.front().is_number_integer()) {
      KVD_RETURN_IF_ERROR(add_ids(prompt));
    } else {
      for (const json& entry : prompt) {
        if (entry.is_string()) {
          add_text(entry.get<std::string>());
        } else if (entry.is_array() && !entry.empty()) {
          KVD_RETURN_IF_ERROR(add_ids(entry));
        } else {
          return Invalid("prompt",
                         "'prompt' must be a string, an array of strings, an array of token "
                         "ids, or an array of arrays of token ids");
        }
      }
    }
  } else {
    return Invalid("prompt",
                   "'prompt' must be a non-empty string, array of strings or array of token ids");
  }
  for (const auto& tokens : params.prompts) {
    if (tokens.empty()) return Invalid("prompt", "a prompt has no tokens");
  }
  return absl::OkStatus();
}

// A message's content: a string, or text parts joined.
absl::StatusOr<std::string> MessageText(const json& content, size_t index) {
  const std::string param = absl::StrCat("messages[", index, "].content");
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return std::string();
  if (!content.is_array()) {
    return Invalid(param, absl::StrCat("'", param, "' must be a string or an array of parts"));
  }
  std::string text;
  for (const json& part : content) {
    if (!StringFieldIs(part, "type", "text") || !part.contains("text") ||
        !part["text"].is_string()) {
      return Invalid(param, absl::StrCat("'", param,
                                         "' supports only parts of type \"text\" with a string "
                                         "\"text\""));
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

// messages[0, last].
json MessagesThrough(const json& messages, int64_t last) {
  json head = json::array();
  for (int64_t i = 0; i <= last && i < static_cast<int64_t>(messages.size()); ++i) {
    head.push_back(messages[static_cast<size_t>(i)]);
  }
  return head;
}

// The prompt of `messages`; with KeepKV on (parsed before), also its protected system turns.
absl::Status ParseMessages(const json& body, const ModelInfo& model,
                           const DocumentContext* document, CompletionParams& params) {
  if (model.chat_template == nullptr) {
    return Invalid("messages", "this model has no chat template; use /v1/completions");
  }
  const auto it = body.find("messages");
  if (it == body.end() || !it->is_array() || it->empty()) {
    return Invalid("messages", "'messages' must be a non-empty array");
  }
  static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};
  json messages = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const json& message = (*it)[i];
    const std::string param = absl::StrCat("messages[", i, "]");
    if (!message.is_object())
      return Invalid(param, absl::StrCat("'", param, "' must be an object"));
    const auto role = message.find("role");
    if (role == message.end() || !role->is_string() ||
        kRoles.count(role->get<std::string>()) == 0) {
      return Invalid(param + ".role",
                     absl::StrCat("'", param,
                                  ".role' must be one of system, developer, user, assistant, "
                                  "tool"));
    }
    json normalized = message;
    auto text = MessageText(message.contains("content") ? message["content"] : json(), i);
    if (!text.ok()) return text.status();
    normalized["content"] = *text;
    messages.push_back(std::move(normalized));
  }
  Fields fields(body);
  bool add_generation_prompt = true;
  KVD_RETURN_IF_ERROR(fields.Boolean("add_generation_prompt", add_generation_prompt));
  json extra = json::object();
  if (const json* kwargs = fields.Get("chat_template_kwargs")) {
    if (!kwargs->is_object()) {
      return Invalid("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    }
    extra = *kwargs;
  }
  const int64_t last_system = LastSystemMessage(messages);
  if (document != nullptr) {
    const auto ordered = [](const json& value) {
      return nlohmann::ordered_json::parse(value.dump());
    };
    auto split = engine::SplitDocumentChat(*model.chat_template, document->text, ordered(messages),
                                           add_generation_prompt, ordered(extra), document->role);
    if (!split.ok()) {
      return Invalid("messages", absl::StrCat("cannot place the document in this conversation: ",
                                              std::string(split.status().message())));
    }
    if (split->prefix != document->prefix.payload->prefix_text) {
      return Invalid("messages",
                     "the conversation renders the text before the document differently from "
                     "when the document was uploaded (chat_template_kwargs change it)");
    }
    params.prompts.push_back(model.tokenizer->Encode(split->suffix, /*add_special=*/false));
    params.prompt_texts.push_back(split->suffix);
    if (params.request.keepkv.has_value() && last_system >= 0) {
      const std::string text = split->prefix + split->suffix;
      params.request.keepkv->protected_prefix = SystemPrefixTokens(
          messages, last_system, {text, split->prefix.size(), params.prompts.back()},
          *model.tokenizer, [&](int64_t last) -> absl::StatusOr<std::string> {
            auto placed = engine::MessagesWithDocument(
                document->text, ordered(MessagesThrough(messages, last)), document->role);
            if (!placed.ok()) return placed.status();
            return model.chat_template->Render(*placed, /*add_generation_prompt=*/false,
                                               ordered(extra));
          });
    }
    return absl::OkStatus();
  }
  auto rendered = model.chat_template->Render(messages, add_generation_prompt, extra);
  if (!rendered.ok()) {
    return Invalid("messages", absl::StrCat("the chat template refused the messages: ",
                                            std::string(rendered.status().message())));
  }
  params.prompts.push_back(model.tokenizer->Encode(*rendered, /*add_special=*/false));
  params.prompt_texts.push_back(*rendered);
  if (params.request.keepkv.has_value() && last_system >= 0) {
    // A second, shorter rendering: a template's output does not say where a turn ends.
    params.request.keepkv->protected_prefix = SystemPrefixTokens(
        messages, last_system, {*rendered, 0, params.prompts.back()}, *model.tokenizer,
        [&](int64_t last) {
          return model.chat_template->Render(MessagesThrough(messages, last),
                                             /*add_generation_prompt=*/false, extra);
        });
  }
  return absl::OkStatus();
}

absl::Status ParseStop(const Fields& fields, const ModelInfo& model, scheduler::Request& request) {
  if (const json* stop = fields.Get("stop")) {
    if (stop->is_string()) {
      request.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array() && static_cast<int32_t>(stop->size()) <= kMaxStopStrings) {
      for (const json& entry : *stop) {
        if (!entry.is_string()) return Invalid("stop", "'stop' must hold strings");
        request.stop.push_back(entry.get<std::string>());
      }
    } else {
      return Invalid("stop", absl::StrCat("'stop' must be a string or an array of at most ",
                                          kMaxStopStrings, " strings"));
    }
    for (const std::string& entry : request.stop) {
      if (entry.empty()) return Invalid("stop", "stop strings must not be empty");
    }
  }
  if (const json* ids = fields.Get("stop_token_ids")) {
    if (!ids->is_array()) return Invalid("stop_token_ids", "'stop_token_ids' must be an array");
    KVD_RETURN_IF_ERROR(
        ParseTokenIds(*ids, "stop_token_ids", model.config->vocab_size, request.stop_token_ids));
  }
  return absl::OkStatus();
}

absl::Status ParseLogitBias(const Fields& fields, int32_t vocab_size,
                            engine::SamplingParams& sampling) {
  const json* bias = fields.Get("logit_bias");
  if (bias == nullptr) return absl::OkStatus();
  if (!bias->is_object()) return Invalid("logit_bias", "'logit_bias' must be an object");
  for (const auto& [key, value] : bias->items()) {
    int32_t token = 0;
    if (!absl::SimpleAtoi(key, &token) || token < 0 || token >= vocab_size) {
      return Invalid("logit_bias", absl::StrCat("logit_bias key '", key,
                                                "' is not a token id of the vocabulary"));
    }
    if (!value.is_number() || value.get<double>() < -100.0 || value.get<double>() > 100.0) {
      return Invalid("logit_bias", absl::StrCat("logit_bias for token ", key,
                                                " must be a number in [-100, 100]"));
    }
    sampling.logit_bias.emplace_back(token, value.get<float>());
  }
  return absl::OkStatus();
}

absl::Status ParseSampling(const Fields& fields, scheduler::Request& request) {
  engine::SamplingParams& sampling = request.sampling;
  KVD_RETURN_IF_ERROR(fields.Number("temperature", 0.0, 2.0, sampling.temperature));
  KVD_RETURN_IF_ERROR(fields.Number("top_p", 0.0, 1.0, sampling.top_p));
  if (sampling.top_p <= 0.0f) return Invalid("top_p", "'top_p' must be in (0, 1]");
  KVD_RETURN_IF_ERROR(
      fields.Integer32("top_k", -1, std::numeric_limits<int32_t>::max(), sampling.top_k));
  KVD_RETURN_IF_ERROR(fields.Number("min_p", 0.0, 1.0, sampling.min_p));
  KVD_RETURN_IF_ERROR(fields.Number("presence_penalty", -2.0, 2.0, sampling.presence_penalty));
  KVD_RETURN_IF_ERROR(fields.Number("frequency_penalty", -2.0, 2.0, sampling.frequency_penalty));
  KVD_RETURN_IF_ERROR(fields.Number("repetition_penalty", 0.01, 10.0, sampling.repetition_penalty));
  int64_t seed = 0;
  if (fields.Get("seed") != nullptr) {
    KVD_RETURN_IF_ERROR(fields.Integer("seed", std::numeric_limits<int64_t>::min(),
                                       std::numeric_limits<int64_t>::max(), seed));
    sampling.seed = static_cast<uint64_t>(seed);
  }
  return absl::OkStatus();
}

absl::Status ParseLogprobs(const Fields& fields, ApiKind kind, CompletionParams& params) {
  engine::SamplingParams& sampling = params.request.sampling;
  if (kind == ApiKind::kCompletion) {
    int32_t logprobs = -1;
    KVD_RETURN_IF_ERROR(fields.Integer32("logprobs", 0, kMaxLogprobs, logprobs));
    params.logprobs = logprobs;
    sampling.logprobs = logprobs >= 0;
    sampling.top_logprobs = std::max(0, logprobs);
    if (params.echo && logprobs >= 0) {
      return Invalid("echo", "'echo' together with 'logprobs' (prompt logprobs) is not supported");
    }
    return absl::OkStatus();
  }
  KVD_RETURN_IF_ERROR(fields.Boolean("logprobs", params.chat_logprobs));
  int32_t top = 0;
  KVD_RETURN_IF_ERROR(fields.Integer32("top_logprobs", 0, kMaxLogprobs, top));
  if (top > 0 && !params.chat_logprobs) {
    return Invalid("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  }
  sampling.logprobs = params.chat_logprobs;
  sampling.top_logprobs = top;
  return absl::OkStatus();
}

// Parameters of the API we do not implement: accepted only at their neutral values.
absl::Status RefuseUnsupported(const Fields& fields, ApiKind kind, int32_t n) {
  if (kind == ApiKind::kCompletion) {
    if (const json* best_of = fields.Get("best_of")) {
      if (!best_of->is_number_integer() || best_of->get<int64_t>() != n) {
        return Invalid("best_of", "'best_of' other than n is not supported");
      }
    }
    if (fields.Get("suffix") != nullptr) return Invalid("suffix", "'suffix' is not supported");
    return absl::OkStatus();
  }
  if (const json* tools = fields.Get("tools"); tools != nullptr && !tools->empty()) {
    return Invalid("tools", "'tools' (function calling) is not supported");
  }
  if (const json* choice = fields.Get("tool_choice");
      choice != nullptr && !(choice->is_string() && choice->get<std::string>() == "none")) {
    return Invalid("tool_choice", "'tool_choice' other than \"none\" is not supported");
  }
  if (const json* format = fields.Get("response_format");
      format != nullptr && !StringFieldIs(*format, "type", "text")) {
    return Invalid("response_format",
                   "'response_format' other than {\"type\": \"text\"} is "
                   "not supported");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CompletionParams> ParseCompletionParams(const json& body, ApiKind kind,
                                                       const ModelInfo& model,
                                                       const DocumentContext* document,
                                                       const KeepKvConfig* keepkv) {
  if (!body.is_object()) {
    return absl::InvalidArgumentError("the request body must be a JSON object");
  }
  KVD_RETURN_IF_ERROR(CheckKeys(body, kind));
  const Fields fields(body);
  CompletionParams params;
  params.kind = kind;
  KVD_RETURN_IF_ERROR(fields.String("model", params.model));
  if (params.model.empty()) return Invalid("model", "'model' is required");
  if (params.model != model.name) {
    return WithErrorCode(WithParam(absl::NotFoundError(absl::StrCat(
                                       "the model '", params.model,
                                       "' does not exist; this server serves '", model.name, "'")),
                                   "model"),
                         "model_not_found");
  }
  scheduler::Request& request = params.request;
  KVD_RETURN_IF_ERROR(fields.Integer32("n", 1, 128, request.n));
  KVD_RETURN_IF_ERROR(RefuseUnsupported(fields, kind, request.n));
  KVD_RETURN_IF_ERROR(fields.Boolean("stream", params.stream));
  if (const json* options = fields.Get("stream_options")) {
    if (!params.stream) {
      return Invalid("stream_options", "'stream_options' is only allowed when 'stream' is true");
    }
    if (!options->is_object())
      return Invalid("stream_options", "'stream_options' must be an object");
    for (const auto& [key, value] : options->items()) {
      if (key != "include_usage" && key != "continuous_usage_stats") {
        return Invalid("stream_options", absl::StrCat("unsupported stream option '", key, "'"));
      }
    }
    const json& usage = options->value("include_usage", json(false));
    if (!usage.is_boolean()) {
      return Invalid("stream_options", "'stream_options.include_usage' must be a boolean");
    }
    params.include_usage = usage.get<bool>();
  }
  {
    auto parsed = ParseKeepKvRequest(body, keepkv != nullptr ? *keepkv : KeepKvConfig{});
    if (!parsed.ok()) return parsed.status();
    request.keepkv = *std::move(parsed);
  }
  if (kind == ApiKind::kCompletion) {
    KVD_RETURN_IF_ERROR(fields.Boolean("echo", params.echo));
    KVD_RETURN_IF_ERROR(ParsePrompts(body, model, document != nullptr, params));
  } else {
    KVD_RETURN_IF_ERROR(ParseMessages(body, model, document, params));
  }
  if (document != nullptr) request.document = document->prefix;
  KVD_RETURN_IF_ERROR(ParseSampling(fields, request));
  KVD_RETURN_IF_ERROR(ParseLogitBias(fields, model.config->vocab_size, request.sampling));
  KVD_RETURN_IF_ERROR(ParseLogprobs(fields, kind, params));
  KVD_RETURN_IF_ERROR(ParseStop(fields, model, request));
  KVD_RETURN_IF_ERROR(fields.Boolean("ignore_eos", request.ignore_eos));
  KVD_RETURN_IF_ERROR(fields.Boolean("skip_special_tokens", request.skip_special_tokens));
  KVD_RETURN_IF_ERROR(fields.Integer32("priority", -1000000, 1000000, request.priority));
  KVD_RETURN_IF_ERROR(fields.String("user", params.user));

  // max_tokens: OpenAI's default is 16 for completions; chat may use the rest of the context.
  const int32_t context = model.config->max_position_embeddings;
  // A document's tokens count towards the context like the prompt's own.
  const size_t document_tokens =
      document != nullptr ? static_cast<size_t>(document->prefix.payload->original_length) : 0;
  size_t longest_prompt = 0;
  for (const auto& prompt : params.prompts) {
    longest_prompt = std::max(longest_prompt, document_tokens + prompt.size());
  }
  const std::string max_key = kind == ApiKind::kChat && fields.Get("max_completion_tokens")
                                  ? "max_completion_tokens"
                                  : "max_tokens";
  request.max_tokens = kind == ApiKind::kChat
                           ? std::max<int32_t>(1, context - static_cast<int32_t>(longest_prompt))
                           : 16;
  KVD_RETURN_IF_ERROR(
      fields.Integer32(max_key, 1, std::numeric_limits<int32_t>::max(), request.max_tokens));
  KVD_RETURN_IF_ERROR(fields.Integer32("min_tokens", 0, request.max_tokens, request.min_tokens));
  if (static_cast<int64_t>(longest_prompt) + request.max_tokens > context) {
    return WithErrorCode(
        WithParam(absl::InvalidArgumentError(absl::StrCat(
                      "this model's maximum context length is ", context, " tokens; you requested ",
                      longest_prompt + request.max_tokens, " tokens (", longest_prompt, " in the ",
                      kind == ApiKind::kChat ? "messages" : "prompt", ", ", request.max_tokens,
                      " in the completion)")),
                  kind == ApiKind::kChat ? "messages" : "prompt"),
        "context_length_exceeded");
  }
  return params;
}

}  // namespace kvd::server
