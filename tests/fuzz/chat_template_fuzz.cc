// Fuzzes text::ChatTemplate (the Jinja parser and renderer) as `kvd serve` runs it. An input
// is a template, then a line "####", then a JSON object: "messages", "add_generation_prompt",
// "bos_token" and "eos_token" if given, every other key a template variable (as
// chat_template_kwargs). Without a JSON object, one user message is rendered.
#include <string>

#include "fuzz_support.h"
#include "nlohmann/json.hpp"
#include "text/chat_template.h"

namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kSeparator = "\n####\n";

// Takes `key` out of `variables`.
Json Take(Json& variables, const char* key, Json fallback) {
  const auto it = variables.find(key);
  if (it == variables.end()) return fallback;
  Json value = std::move(*it);
  variables.erase(it);
  return value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [source, variables_text] =
      kvd::fuzz::SplitOnce(kvd::fuzz::AsText(data, size), kSeparator);
  Json variables = Json::parse(variables_text, nullptr, /*allow_exceptions=*/false);
  if (!variables.is_object()) variables = Json::object();
  Json messages = Take(variables, "messages", Json::parse(R"([{"role":"user","content":"Hi"}])"));
  const Json add_generation_prompt = Take(variables, "add_generation_prompt", true);
  const Json bos = Take(variables, "bos_token", "<s>");
  const Json eos = Take(variables, "eos_token", "</s>");

  auto chat_template =
      kvd::text::ChatTemplate::Parse(source, bos.is_string() ? bos.get<std::string>() : "",
                                     eos.is_string() ? eos.get<std::string>() : "");
  if (!chat_template.ok()) return 0;
  (void)(*chat_template)
      ->Render(messages, add_generation_prompt.is_boolean() && add_generation_prompt.get<bool>(),
               variables);
  return 0;
}
