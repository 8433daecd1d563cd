#include "server/core/tool_parser.h"

#include "absl/strings/str_cat.h"

namespace kvd::server {

absl::StatusOr<std::optional<structured::ToolCallSyntax>> ResolveToolParser(
    const std::string& setting, const text::ChatTemplate* chat_template) {
  if (setting == "none" || chat_template == nullptr) return std::nullopt;
  const bool takes_tools = structured::TemplateTakesTools(chat_template->source());
  if (setting != "auto") {
    const auto syntax = structured::ToolCallSyntaxNamed(setting);
    if (!syntax) {
      return absl::InvalidArgumentError(
          absl::StrCat("model.tool_parser: unknown parser '", setting, "' (auto, none, ",
                       std::string(structured::ToolCallSyntaxNames()), ")"));
    }
    if (!takes_tools) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model.tool_parser is '", setting,
          "' but the model's chat template never reads `tools`; set it to auto or none"));
    }
    return syntax;
  }
  if (!takes_tools) return std::nullopt;
  const auto detected = structured::DetectToolCallSyntax(chat_template->source());
  if (!detected) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model's chat template reads `tools` but teaches no tool-call syntax kvd "
                     "recognises; set model.tool_parser to one of ",
                     std::string(structured::ToolCallSyntaxNames()), ", or none to refuse tools"));
  }
  return detected;
}

}  // namespace kvd::server
