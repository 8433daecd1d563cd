#include "structured/constraint_spec.h"

#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "structured/json_schema_grammar.h"
#include "structured/regex_grammar.h"
#include "structured/tool_call_syntax.h"
#include "text/bounded_json.h"

namespace kvd::structured {
namespace {

// Deepest JSON nesting a schema may have.
constexpr int kMaxSchemaJsonDepth = 64;

absl::StatusOr<Grammar> CompileChoice(const std::string& text) {
  KVD_ASSIGN_OR_RETURN(const JsonValue choices,
                       text::ParseBoundedJson<JsonValue>(text, "the choices", 2));
  if (!choices.is_array() || choices.empty()) {
    return absl::InvalidArgumentError("the choices must be a non-empty array of strings");
  }
  GrammarBuilder builder;
  const int32_t root = builder.AddRule("choice");
  for (const JsonValue& choice : choices) {
    if (!choice.is_string() || choice.get_ref<const std::string&>().empty()) {
      return absl::InvalidArgumentError("the choices must be non-empty strings");
    }
    std::vector<Symbol> sequence;
    builder.AppendLiteral(choice.get_ref<const std::string&>(), sequence);
    builder.AddAlternative(root, sequence);
  }
  return std::move(builder).Build(root);
}

}  // namespace

absl::StatusOr<Grammar> CompileConstraint(const ConstraintSpec& spec) {
  switch (spec.kind) {
    case ConstraintSpec::Kind::kJsonSchema: {
      KVD_ASSIGN_OR_RETURN(
          const JsonValue schema,
          text::ParseBoundedJson<JsonValue>(spec.text, "the JSON Schema", kMaxSchemaJsonDepth));
      return CompileJsonSchema(schema, spec.whitespace);
    }
    case ConstraintSpec::Kind::kJsonObject:
      return CompileAnyJsonObject(spec.whitespace);
    case ConstraintSpec::Kind::kRegex: {
      GrammarBuilder builder;
      KVD_ASSIGN_OR_RETURN(const int32_t root, AddRegexRule(builder, spec.text));
      return std::move(builder).Build(root);
    }
    case ConstraintSpec::Kind::kChoice:
      return CompileChoice(spec.text);
    case ConstraintSpec::Kind::kToolCalls: {
      KVD_ASSIGN_OR_RETURN(const ToolCallGrammarSpec calls, ParseToolCallGrammarText(spec.text));
      return CompileToolCalls(calls, spec.whitespace);
    }
  }
  return absl::InvalidArgumentError("unknown constraint kind");
}

}  // namespace kvd::structured
