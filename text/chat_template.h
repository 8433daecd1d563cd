// Turns chat messages into a prompt with the model's Jinja chat template, as Hugging Face's
// `apply_chat_template` does: jinja2 with trim_blocks and lstrip_blocks, loop controls, the
// `raise_exception` and `strftime_now` globals, and HF's `tojson` (json.dumps with
// ensure_ascii=False: ", "/": " separators, or ","/": " with an indent).
//
// The interpreter (internal/jinja/) covers what Llama 3.x, Qwen2.5/3, Mistral and similar
// templates use: if/for/set/macro/break/continue/raw/generation, the usual filters, tests and
// str/dict/list methods, Python value semantics and jinja2's default Undefined. Not supported:
// include/extends/import, call and filter blocks, recursive loops, *args/**kwargs, str.format
// specs. Loop iterations, macro depth, nesting and output size are bounded.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace kvd::text {

namespace internal::jinja {
class Template;
}  // namespace internal::jinja

// A chat template parsed once; Render is const and thread-safe.
class ChatTemplate {
 public:
  // Parses `source`. Syntax errors, unknown filters or tests: InvalidArgument naming
  // line:column.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ChatTemplate>> Parse(std::string_view source,
                                                                           std::string bos_token,
                                                                           std::string eos_token);
  // Reads <model_dir>/tokenizer_config.json: "chat_template" (a string, or a list of
  // {"name", "template"} objects where "default" is used), "bos_token"/"eos_token" (a string
  // or an object with "content"). NotFound when the file or chat_template is missing;
  // InvalidArgument when the file is not JSON or the template does not parse.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ChatTemplate>> FromTokenizerConfig(
      const std::filesystem::path& model_dir);

  ~ChatTemplate();
  ChatTemplate(const ChatTemplate&) = delete;
  ChatTemplate& operator=(const ChatTemplate&) = delete;

  // Renders with the variables messages, add_generation_prompt, bos_token, eos_token, tools
  // and documents (None unless given, as HF passes them), plus every key of `extra` (e.g.
  // tools, documents, enable_thinking), which may override all but messages and
  // add_generation_prompt. raise_exception: InvalidArgument with exactly its message; other
  // runtime errors and exceeded limits: InvalidArgument "line:column: message".
  //
  // JSON objects keep their key order only in the ordered_json overload; `tojson` of a
  // nlohmann::json object prints keys sorted, unlike HF, so callers that forward client JSON
  // (tools) should parse it as ordered_json.
  [[nodiscard]] absl::StatusOr<std::string> Render(
      const nlohmann::json& messages, bool add_generation_prompt,
      const nlohmann::json& extra = nlohmann::json::object()) const;
  [[nodiscard]] absl::StatusOr<std::string> Render(
      const nlohmann::ordered_json& messages, bool add_generation_prompt,
      const nlohmann::ordered_json& extra = nlohmann::ordered_json::object()) const;

  // The template's text, for what it reveals about the model (which tool-call syntax it teaches).
  const std::string& source() const { return source_; }
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }

 private:
  ChatTemplate(std::unique_ptr<internal::jinja::Template> tmpl, std::string source,
               std::string bos_token, std::string eos_token);

  template <typename Json>
  absl::StatusOr<std::string> RenderJson(const Json& messages, bool add_generation_prompt,
                                         const Json& extra) const;

  std::unique_ptr<internal::jinja::Template> template_;
  std::string source_;
  std::string bos_token_;
  std::string eos_token_;
};

}  // namespace kvd::text
