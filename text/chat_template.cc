// Chat-template loading from tokenizer_config.json and rendering of chat requests.
#include "text/chat_template.h"

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "text/bounded_json.h"
#include "text/internal/jinja/json_convert.h"
#include "text/internal/jinja/template.h"

namespace kvd::text {

namespace {

using internal::jinja::Value;
using internal::jinja::ValueDict;

// A special token as tokenizer_config.json spells it: a string, an AddedToken object with
// "content", or absent/null (empty).
std::string TokenText(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    const auto content = it->find("content");
    if (content != it->end() && content->is_string()) return content->get<std::string>();
  }
  return "";
}

// The "default" template of a list of named templates, or the only string.
absl::StatusOr<std::string> TemplateSource(const nlohmann::json& config, const std::string& path) {
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) {
    return absl::NotFoundError(path + " has no chat_template");
  }
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const nlohmann::json& entry : *it) {
      if (!entry.is_object()) continue;
      const auto name = entry.find("name");
      if (name != entry.end() && name->is_string() && name->get<std::string>() == "default") {
        const auto source = entry.find("template");
        if (source != entry.end() && source->is_string()) return source->get<std::string>();
      }
    }
    return absl::NotFoundError(path + " has no chat_template named \"default\"");
  }
  return absl::InvalidArgumentError(path + ": chat_template must be a string or a list");
}

}  // namespace

ChatTemplate::ChatTemplate(std::unique_ptr<internal::jinja::Template> tmpl, std::string source,
                           std::string bos_token, std::string eos_token)
    : template_(std::move(tmpl)),
      source_(std::move(source)),
      bos_token_(std::move(bos_token)),
      eos_token_(std::move(eos_token)) {}

ChatTemplate::~ChatTemplate() = default;

absl::StatusOr<std::unique_ptr<ChatTemplate>> ChatTemplate::Parse(std::string_view source,
                                                                  std::string bos_token,
                                                                  std::string eos_token) {
  absl::StatusOr<std::unique_ptr<internal::jinja::Template>> parsed =
      internal::jinja::Template::Parse(source);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("chat template: ", std::string(parsed.status().message())));
  }
  return std::unique_ptr<ChatTemplate>(new ChatTemplate(
      *std::move(parsed), std::string(source), std::move(bos_token), std::move(eos_token)));
}

absl::StatusOr<std::unique_ptr<ChatTemplate>> ChatTemplate::FromTokenizerConfig(
    const std::filesystem::path& model_dir) {
  const std::filesystem::path path = model_dir / "tokenizer_config.json";
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError("cannot open " + path.string());
  std::ostringstream contents;
  contents << file.rdbuf();
  const absl::StatusOr<nlohmann::json> json = ParseBoundedJson(contents.str(), path.string());
  if (!json.ok() || !json->is_object()) {
    return absl::InvalidArgumentError(path.string() + " is not a JSON object");
  }
  const nlohmann::json& config = *json;
  KVD_ASSIGN_OR_RETURN(std::string source, TemplateSource(config, path.string()));
  absl::StatusOr<std::unique_ptr<ChatTemplate>> parsed =
      Parse(source, TokenText(config, "bos_token"), TokenText(config, "eos_token"));
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(), ": ", std::string(parsed.status().message())));
  }
  return parsed;
}

template <typename Json>
absl::StatusOr<std::string> ChatTemplate::RenderJson(const Json& messages,
                                                     bool add_generation_prompt,
                                                     const Json& extra) const {
  if (!extra.is_object()) {
    return absl::InvalidArgumentError("chat template variables must be a JSON object");
  }
  ValueDict variables;
  variables.Set(Value::String("bos_token"), Value::String(bos_token_));
  variables.Set(Value::String("eos_token"), Value::String(eos_token_));
  // HF passes tools and documents as None when the request has none.
  variables.Set(Value::String("tools"), Value::None());
  variables.Set(Value::String("documents"), Value::None());
  for (auto it = extra.begin(); it != extra.end(); ++it) {
    KVD_ASSIGN_OR_RETURN(Value value, internal::jinja::FromJson(it.value()));
    variables.Set(Value::String(it.key()), std::move(value));
  }
  KVD_ASSIGN_OR_RETURN(Value message_list, internal::jinja::FromJson(messages));
  variables.Set(Value::String("messages"), std::move(message_list));
  variables.Set(Value::String("add_generation_prompt"), Value::Bool(add_generation_prompt));
  absl::StatusOr<std::string> rendered = template_->Render(variables);
  if (!rendered.ok()) {
    return absl::InvalidArgumentError(std::string(rendered.status().message()));
  }
  return rendered;
}

absl::StatusOr<std::string> ChatTemplate::Render(const nlohmann::json& messages,
                                                 bool add_generation_prompt,
                                                 const nlohmann::json& extra) const {
  return RenderJson(messages, add_generation_prompt, extra);
}

absl::StatusOr<std::string> ChatTemplate::Render(const nlohmann::ordered_json& messages,
                                                 bool add_generation_prompt,
                                                 const nlohmann::ordered_json& extra) const {
  return RenderJson(messages, add_generation_prompt, extra);
}

}  // namespace kvd::text
