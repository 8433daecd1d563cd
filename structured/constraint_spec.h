// What a request constrains its output to, as the API layer reads it, and its compilation into
// a grammar: the one place that knows every kind of constraint.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "structured/grammar.h"
#include "structured/json_whitespace.h"

namespace kvd::structured {

struct ConstraintSpec {
  enum class Kind {
    kJsonSchema,  // `text` is a JSON Schema, keys in the client's order
    kJsonObject,  // any JSON object; `text` is empty
    kRegex,       // `text` is a regular expression the whole output matches
    kChoice,      // `text` is a JSON array of strings; the output is exactly one of them
    kToolCalls,   // `text` is a ToolCallGrammarText (tool_call_syntax.h)
  };
  Kind kind = Kind::kJsonObject;
  std::string text;
  // How the JSON kinds (schema, object, tool-call arguments) space their tokens; the others
  // ignore it.
  JsonWhitespace whitespace = JsonWhitespace::kCompact;

  friend bool operator==(const ConstraintSpec&, const ConstraintSpec&) = default;
};

// The grammar of `spec`'s outputs. InvalidArgument naming what it cannot compile.
[[nodiscard]] absl::StatusOr<Grammar> CompileConstraint(const ConstraintSpec& spec);

}  // namespace kvd::structured
