// Which tool-call syntax a served model's output is parsed with (`model.tool_parser`): set by
// the operator, or detected from the chat template; decided once, at start-up.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "structured/tool_call_syntax.h"
#include "text/chat_template.h"

namespace kvd::server {

// The syntax for `setting` and the model's template (null: no chat). nullopt: the model takes
// no tools (no template, a template that does not read `tools`, or "none"). InvalidArgument,
// naming model.tool_parser, for a syntax set on a template without tools and for a template
// that reads `tools` in a syntax "auto" does not recognise.
[[nodiscard]] absl::StatusOr<std::optional<structured::ToolCallSyntax>> ResolveToolParser(
    const std::string& setting, const text::ChatTemplate* chat_template);

}  // namespace kvd::server
