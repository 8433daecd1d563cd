// How a model family writes tool calls: which syntax a chat template asks for, the grammar of
// calls (for `required` and named tool choices), and a streaming parser that splits output text
// into content and calls as it arrives, so a streamed reply and a whole one say the same.
//
// Syntaxes (vLLM's parser names):
//   hermes       <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>, anywhere in the
//                text, several in a row (Qwen2.5/3, Hermes)
//   llama3_json  {"name": "f", "parameters": {...}} as the whole output, several separated by
//                "; " (Llama 3.1/3.2)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "structured/grammar.h"
#include "structured/json_rules.h"

namespace kvd::structured {

enum class ToolCallSyntax { kHermes, kLlama3Json };

std::string_view ToolCallSyntaxName(ToolCallSyntax syntax);
// "hermes" or "llama3_json"; nullopt for any other name.
std::optional<ToolCallSyntax> ToolCallSyntaxNamed(std::string_view name);
// Every name ToolCallSyntaxNamed accepts, comma-separated, for errors.
std::string_view ToolCallSyntaxNames();

// Whether a chat template's source reads the `tools` variable: the name inside a {{ }} or {% %}
// block (prose that mentions tools, or `custom_tools`, does not count).
bool TemplateTakesTools(std::string_view template_source);
// The syntax a template that takes tools teaches the model: hermes when it writes <tool_call>
// tags, llama3_json when it asks for {"name": function name, "parameters": ...}; nullopt when
// neither.
std::optional<ToolCallSyntax> DetectToolCallSyntax(std::string_view template_source);

// The functions a constrained output may call, and how.
struct ToolCallGrammarSpec {
  struct Function {
    std::string name;
    JsonValue parameters;  // a JSON Schema; null: any JSON object
  };
  ToolCallSyntax syntax = ToolCallSyntax::kHermes;
  std::vector<Function> functions;  // at least one
  bool parallel = true;             // one or more calls; false: exactly one
};

// The spec as ConstraintSpec's text (kToolCalls), and back.
std::string ToolCallGrammarText(const ToolCallGrammarSpec& spec);
[[nodiscard]] absl::StatusOr<ToolCallGrammarSpec> ParseToolCallGrammarText(std::string_view text);

// The grammar of outputs that are only calls of `spec`'s functions, each written in its syntax
// with arguments valid under the function's parameters schema and spaced as `whitespace` says.
// InvalidArgument naming the function whose schema does not compile.
[[nodiscard]] absl::StatusOr<Grammar> CompileToolCalls(const ToolCallGrammarSpec& spec,
                                                       JsonWhitespace whitespace);

// A piece of parsed output: text for `content`, and call fragments. A call's first fragment
// carries its name; its arguments are the argument text as the model wrote it, in order.
struct ToolCallFragment {
  int32_t index = 0;  // the call's position in the output, from 0
  std::string name;   // set in the call's first fragment only
  std::string arguments;
};
struct ParsedOutput {
  std::string content;
  std::vector<ToolCallFragment> calls;
  bool empty() const { return content.empty() && calls.empty(); }
};

// Parses one output as it grows. Text that does not follow the call syntax stays content, which
// is the text outside calls, whitespace at its ends dropped when there are calls. Whatever the
// pieces, the parse of a text is the same.
class ToolCallStream {
 public:
  // Bytes a call's opening (tag and name) may take before it is read as content.
  static constexpr size_t kMaxCallHeaderBytes = 4096;

  explicit ToolCallStream(ToolCallSyntax syntax) : syntax_(syntax) {}

  ParsedOutput Feed(std::string_view text);
  // The output ended: whatever was held back.
  ParsedOutput Finish();
  int32_t calls() const { return calls_; }

 private:
  enum class State {
    kStart,           // llama3_json: before the first non-whitespace byte
    kContent,         // hermes: text, looking for <tool_call>
    kPlainText,       // llama3_json: the output is not calls; all of it is content
    kHeader,          // reading {"name": ..., "arguments": {
    kArguments,       // inside the arguments object
    kAfterArguments,  // reading the call's closing
    kBetweenCalls,    // llama3_json: "; " or the end
  };

  void Run(bool end, ParsedOutput& out);
  void AddContent(std::string_view text, ParsedOutput& out);
  void AddArguments(std::string_view text, ParsedOutput& out);
  // Leaves kStart, kHeader, kAfterArguments or kBetweenCalls on text that does not follow the
  // syntax.
  void Abandon(State state, ParsedOutput& out);

  const ToolCallSyntax syntax_;
  State state_ = State::kStart;
  std::string pending_;          // bytes not yet decided
  std::string held_whitespace_;  // content whitespace, written once text follows it
  int32_t calls_ = 0;
  bool wrote_content_ = false;    // some non-whitespace content was written
  bool after_separator_ = false;  // llama3_json: a ";" was read after a call
  int32_t depth_ = 0;             // kArguments: open brackets
  bool in_string_ = false;
  bool escaped_ = false;
};

}  // namespace kvd::structured
