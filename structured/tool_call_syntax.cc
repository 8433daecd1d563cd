#include "structured/tool_call_syntax.h"

#include <deque>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "structured/json_schema_grammar.h"
#include "text/bounded_json.h"

namespace kvd::structured {
namespace {

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kWhitespace = " \t\r\n";
// Deepest JSON nesting of a tool-call grammar's text: a schema's own depth and three levels.
constexpr int kMaxGrammarTextDepth = 64 + 3;

bool IsWhitespace(char c) { return kWhitespace.find(c) != std::string_view::npos; }

// How the syntax writes one call around its arguments object, and between calls.
struct CallLayout {
  std::string_view open;       // before {"name": ...
  std::string_view arguments;  // the key holding the arguments
  std::string_view close;      // after the call's closing }
  std::string_view separator;  // between two calls
};

CallLayout LayoutOf(ToolCallSyntax syntax) {
  switch (syntax) {
    case ToolCallSyntax::kHermes:
      return {"<tool_call>\n", "arguments", "\n</tool_call>", "\n"};
    case ToolCallSyntax::kLlama3Json:
      return {"", "parameters", "", "; "};
  }
  KVD_CHECK(false);
  return {};
}

// Reading a fixed shape from the front of a text that may still grow.
enum class Match { kMatched, kNeedMore, kFailed };

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  size_t position() const { return position_; }
  void SkipWhitespace() {
    while (position_ < text_.size() && IsWhitespace(text_[position_])) ++position_;
  }
  // `literal` next, after optional whitespace.
  Match Literal(std::string_view literal) {
    SkipWhitespace();
    const std::string_view rest = text_.substr(position_);
    const size_t common = std::min(rest.size(), literal.size());
    if (rest.substr(0, common) != literal.substr(0, common)) return Match::kFailed;
    if (common < literal.size()) return Match::kNeedMore;
    position_ += literal.size();
    return Match::kMatched;
  }
  // A JSON string next, after optional whitespace, decoded into `out`.
  Match String(std::string& out) {
    SkipWhitespace();
    if (position_ == text_.size()) return Match::kNeedMore;
    if (text_[position_] != '"') return Match::kFailed;
    bool escaped = false;
    for (size_t end = position_ + 1; end < text_.size(); ++end) {
      const char c = text_[end];
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        auto value = text::ParseBoundedJson<JsonValue>(text_.substr(position_, end + 1 - position_),
                                                       "a name", 1);
        if (!value.ok() || !value->is_string()) return Match::kFailed;
        out = value->get<std::string>();
        position_ = end + 1;
        return Match::kMatched;
      }
    }
    return Match::kNeedMore;
  }

 private:
  std::string_view text_;
  size_t position_ = 0;
};

// "arguments" or "parameters" next.
Match ArgumentsKey(Reader& reader) {
  bool partial = false;
  for (std::string_view key : {"\"arguments\"", "\"parameters\""}) {
    Reader attempt = reader;
    const Match match = attempt.Literal(key);
    if (match == Match::kMatched) {
      reader = attempt;
      return match;
    }
    partial = partial || match == Match::kNeedMore;
  }
  return partial ? Match::kNeedMore : Match::kFailed;
}

// {"name": "f", "arguments": {   (or "parameters"), up to and including the arguments' brace.
Match ReadCallHeader(std::string_view text, std::string& name, size_t& consumed) {
  Reader reader(text);
  Match match = Match::kMatched;
  auto step = [&](Match next) {
    match = next;
    return next == Match::kMatched;
  };
  if (!step(reader.Literal("{")) || !step(reader.Literal("\"name\"")) ||
      !step(reader.Literal(":")) || !step(reader.String(name)) || !step(reader.Literal(","))) {
    return match;
  }
  // Either key for the arguments, whatever the syntax: models trained on one write the other.
  if (!step(ArgumentsKey(reader))) return match;
  if (!step(reader.Literal(":")) || !step(reader.Literal("{"))) return match;
  if (name.empty()) return Match::kFailed;
  consumed = reader.position();
  return Match::kMatched;
}

// The rest of a call after its arguments: } and, for hermes, </tool_call>.
Match ReadCallClose(std::string_view text, ToolCallSyntax syntax, size_t& consumed) {
  Reader reader(text);
  Match match = reader.Literal("}");
  if (match == Match::kMatched && syntax == ToolCallSyntax::kHermes) {
    match = reader.Literal(kHermesClose);
  }
  consumed = reader.position();
  return match;
}

// The length of the longest end of `text` that begins `marker` (without being all of it).
size_t PartialMarkerAtEnd(std::string_view text, std::string_view marker) {
  for (size_t length = std::min(text.size(), marker.size() - 1); length > 0; --length) {
    if (text.substr(text.size() - length) == marker.substr(0, length)) return length;
  }
  return 0;
}

// The schema a function's arguments are compiled under: arguments are always an object, so a
// schema without a type is an object's (nullopt: any object), and one of another type refused.
absl::StatusOr<std::optional<JsonValue>> ArgumentsSchema(
    const ToolCallGrammarSpec::Function& function) {
  const JsonValue& parameters = function.parameters;
  if (parameters.is_null() || (parameters.is_object() && parameters.empty())) return std::nullopt;
  const auto refused = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("the parameters of function '", function.name,
                     "' must be a JSON Schema of an object (\"type\": \"object\")"));
  };
  if (!parameters.is_object()) return refused();
  if (!parameters.contains("type")) {
    JsonValue object = parameters;
    object["type"] = "object";
    return object;
  }
  if (parameters["type"] != "object") return refused();
  return parameters;
}

}  // namespace

std::string_view ToolCallSyntaxName(ToolCallSyntax syntax) {
  return syntax == ToolCallSyntax::kHermes ? "hermes" : "llama3_json";
}

std::optional<ToolCallSyntax> ToolCallSyntaxNamed(std::string_view name) {
  if (name == "hermes") return ToolCallSyntax::kHermes;
  if (name == "llama3_json") return ToolCallSyntax::kLlama3Json;
  return std::nullopt;
}

std::string_view ToolCallSyntaxNames() { return "hermes, llama3_json"; }

bool TemplateTakesTools(std::string_view template_source) {
  const auto identifier_char = [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  constexpr std::string_view kName = "tools";
  // The name `tools` inside an expression or statement block, not in text.
  for (size_t at = template_source.find('{'); at != std::string_view::npos;
       at = template_source.find('{', at + 1)) {
    if (at + 1 == template_source.size()) break;
    const char kind = template_source[at + 1];
    if (kind != '{' && kind != '%') continue;
    const size_t end = template_source.find(kind == '{' ? "}}" : "%}", at + 2);
    const std::string_view block = template_source.substr(
        at + 2, end == std::string_view::npos ? std::string_view::npos : end - at - 2);
    for (size_t p = block.find(kName); p != std::string_view::npos; p = block.find(kName, p + 1)) {
      const bool starts = p == 0 || !identifier_char(block[p - 1]);
      const bool ends =
          p + kName.size() == block.size() || !identifier_char(block[p + kName.size()]);
      if (starts && ends) return true;
    }
    if (end == std::string_view::npos) break;
    at = end;
  }
  return false;
}

std::optional<ToolCallSyntax> DetectToolCallSyntax(std::string_view template_source) {
  if (template_source.find(kHermesOpen) != std::string_view::npos) return ToolCallSyntax::kHermes;
  if (template_source.find("\"parameters\": dictionary") != std::string_view::npos ||
      template_source.find("<|python_tag|>") != std::string_view::npos) {
    return ToolCallSyntax::kLlama3Json;
  }
  return std::nullopt;
}

std::string ToolCallGrammarText(const ToolCallGrammarSpec& spec) {
  JsonValue functions = JsonValue::array();
  for (const auto& function : spec.functions) {
    functions.push_back({{"name", function.name}, {"parameters", function.parameters}});
  }
  const JsonValue text = {{"syntax", std::string(ToolCallSyntaxName(spec.syntax))},
                          {"parallel", spec.parallel},
                          {"functions", std::move(functions)}};
  return text.dump();
}

absl::StatusOr<ToolCallGrammarSpec> ParseToolCallGrammarText(std::string_view text) {
  KVD_ASSIGN_OR_RETURN(const JsonValue value, text::ParseBoundedJson<JsonValue>(
                                                  text, "the tool calls", kMaxGrammarTextDepth));
  const auto invalid = [] {
    return absl::InvalidArgumentError(
        "tool calls need {\"syntax\", \"parallel\", \"functions\": [{\"name\", \"parameters\"}]}");
  };
  if (!value.is_object() || !value.contains("syntax") || !value["syntax"].is_string() ||
      !value.contains("parallel") || !value["parallel"].is_boolean() ||
      !value.contains("functions") || !value["functions"].is_array() ||
      value["functions"].empty()) {
    return invalid();
  }
  ToolCallGrammarSpec spec;
  const auto syntax = ToolCallSyntaxNamed(value["syntax"].get<std::string>());
  if (!syntax) return invalid();
  spec.syntax = *syntax;
  spec.parallel = value["parallel"].get<bool>();
  for (const JsonValue& function : value["functions"]) {
    if (!function.is_object() || !function.contains("name") || !function["name"].is_string() ||
        function["name"].get_ref<const std::string&>().empty()) {
      return invalid();
    }
    spec.functions.push_back(
        {function["name"].get<std::string>(), function.value("parameters", JsonValue())});
  }
  return spec;
}

absl::StatusOr<Grammar> CompileToolCalls(const ToolCallGrammarSpec& spec,
                                         JsonWhitespace whitespace) {
  if (spec.functions.empty()) return absl::InvalidArgumentError("no function to call");
  const CallLayout layout = LayoutOf(spec.syntax);
  GrammarBuilder builder;
  JsonRules json(builder, whitespace);
  const int32_t call = builder.AddRule("tool_call");
  std::deque<JsonValue> object_schemas;  // the schemas $ref pointers resolve in, kept alive
  for (const auto& function : spec.functions) {
    KVD_ASSIGN_OR_RETURN(std::optional<JsonValue> parameters, ArgumentsSchema(function));
    int32_t arguments = 0;
    if (!parameters) {
      arguments = json.Object();
    } else {
      const JsonValue& root = object_schemas.emplace_back(*std::move(parameters));
      JsonSchemaRules schema(json, root);
      auto rule = schema.AddSchema(root, "");
      if (!rule.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the parameters of function '", function.name, "': ", rule.status().message()));
      }
      arguments = *rule;
    }
    std::vector<Symbol> sequence;
    builder.AppendLiteral(
        absl::StrCat(std::string(layout.open), "{\"name\": ", JsonValue(function.name).dump(),
                     ", \"", std::string(layout.arguments), "\": "),
        sequence);
    sequence.push_back(Symbol::Rule(arguments));
    builder.AppendLiteral(absl::StrCat("}", std::string(layout.close)), sequence);
    builder.AddAlternative(call, sequence);
  }
  if (!spec.parallel) return std::move(builder).Build(call);
  // call (separator call)*, the repetition a tail call.
  const int32_t more = builder.AddRule("more_tool_calls");
  std::vector<Symbol> next;
  builder.AppendLiteral(layout.separator, next);
  next.push_back(Symbol::Rule(call));
  next.push_back(Symbol::Rule(more));
  builder.AddAlternative(more, next);
  builder.AddAlternative(more, {});
  const int32_t root = builder.AddRule("tool_calls");
  const Symbol calls[] = {Symbol::Rule(call), Symbol::Rule(more)};
  builder.AddAlternative(root, calls);
  return std::move(builder).Build(root);
}

ParsedOutput ToolCallStream::Feed(std::string_view text) {
  pending_.append(text);
  ParsedOutput out;
  Run(/*end=*/false, out);
  return out;
}

ParsedOutput ToolCallStream::Finish() {
  ParsedOutput out;
  Run(/*end=*/true, out);
  if (calls_ == 0) out.content += held_whitespace_;
  held_whitespace_.clear();
  return out;
}

void ToolCallStream::AddContent(std::string_view text, ParsedOutput& out) {
  const size_t first = text.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) {
    held_whitespace_.append(text);
    return;
  }
  held_whitespace_.append(text.substr(0, first));
  // Whitespace is written between texts; before any text, only while there is no call.
  if (wrote_content_ || calls_ == 0) out.content += held_whitespace_;
  const size_t last = text.find_last_not_of(kWhitespace);
  out.content.append(text.substr(first, last + 1 - first));
  held_whitespace_.assign(text.substr(last + 1));
  wrote_content_ = true;
}

void ToolCallStream::AddArguments(std::string_view text, ParsedOutput& out) {
  if (text.empty()) return;
  if (out.calls.empty() || out.calls.back().index != calls_ - 1) {
    out.calls.push_back({calls_ - 1, "", ""});
  }
  out.calls.back().arguments.append(text);
}

void ToolCallStream::Abandon(State state, ParsedOutput& out) {
  if (syntax_ == ToolCallSyntax::kHermes) {
    // The tag was text after all: it and what follows go back to content.
    if (state == State::kHeader) AddContent(kHermesOpen, out);
    state_ = State::kContent;
  } else {
    // The separator before text that is no call was text too.
    if (after_separator_) AddContent(";", out);
    state_ = State::kPlainText;
  }
  after_separator_ = false;
}

void ToolCallStream::Run(bool end, ParsedOutput& out) {
  if (state_ == State::kStart && syntax_ == ToolCallSyntax::kHermes) state_ = State::kContent;
  while (true) {
    switch (state_) {
      case State::kStart: {
        const size_t first = pending_.find_first_not_of(kWhitespace);
        if (first == std::string::npos) {
          if (!end) return;
          if (calls_ > 0) pending_.clear();  // whitespace after a separator: layout
          state_ = State::kPlainText;
          break;
        }
        if (calls_ > 0) pending_.erase(0, first);
        if (pending_[calls_ > 0 ? 0 : first] == '{') {
          state_ = State::kHeader;
        } else {
          Abandon(State::kStart, out);
        }
        break;
      }
      case State::kPlainText:
        AddContent(pending_, out);
        pending_.clear();
        return;
      case State::kContent: {
        const size_t open = pending_.find(kHermesOpen);
        if (open != std::string::npos) {
          AddContent(std::string_view(pending_).substr(0, open), out);
          pending_.erase(0, open + kHermesOpen.size());
          state_ = State::kHeader;
          break;
        }
        const size_t keep = end ? 0 : PartialMarkerAtEnd(pending_, kHermesOpen);
        AddContent(std::string_view(pending_).substr(0, pending_.size() - keep), out);
        pending_.erase(0, pending_.size() - keep);
        return;
      }
      case State::kHeader: {
        std::string name;
        size_t consumed = 0;
        const Match match = ReadCallHeader(pending_, name, consumed);
        // Past the bound the header is text, however the bytes arrived.
        const bool too_long = match == Match::kMatched ? consumed > kMaxCallHeaderBytes
                                                       : pending_.size() > kMaxCallHeaderBytes;
        if (match == Match::kNeedMore && !end && !too_long) return;
        if (match != Match::kMatched || too_long) {
          Abandon(State::kHeader, out);
          break;
        }
        after_separator_ = false;
        out.calls.push_back({calls_, std::move(name), "{"});
        ++calls_;
        pending_.erase(0, consumed);
        depth_ = 1;
        in_string_ = false;
        escaped_ = false;
        state_ = State::kArguments;
        break;
      }
      case State::kArguments: {
        size_t length = 0;
        for (; length < pending_.size() && depth_ > 0; ++length) {
          const char c = pending_[length];
          if (in_string_) {
            if (escaped_) {
              escaped_ = false;
            } else if (c == '\\') {
              escaped_ = true;
            } else if (c == '"') {
              in_string_ = false;
            }
          } else if (c == '"') {
            in_string_ = true;
          } else if (c == '{' || c == '[') {
            ++depth_;
          } else if (c == '}' || c == ']') {
            --depth_;
          }
        }
        AddArguments(std::string_view(pending_).substr(0, length), out);
        pending_.erase(0, length);
        if (depth_ > 0) return;  // the arguments go on (or the output was cut inside them)
        state_ = State::kAfterArguments;
        break;
      }
      case State::kAfterArguments: {
        size_t consumed = 0;
        const Match match = ReadCallClose(pending_, syntax_, consumed);
        if (match == Match::kNeedMore && !end) return;
        if (match == Match::kMatched) {
          pending_.erase(0, consumed);
          state_ = syntax_ == ToolCallSyntax::kHermes ? State::kContent : State::kBetweenCalls;
        } else if (match == Match::kNeedMore) {
          return;  // cut inside the closing: the call stands as written
        } else {
          Abandon(State::kAfterArguments, out);
        }
        break;
      }
      case State::kBetweenCalls: {
        Reader reader(pending_);
        const Match match = reader.Literal(";");
        if (match == Match::kMatched) {
          pending_.erase(0, reader.position());
          after_separator_ = true;
          state_ = State::kStart;
          break;
        }
        if (match == Match::kNeedMore) {
          // Only whitespace so far: the end, or more calls to come.
          if (!end) return;
          pending_.clear();
          return;
        }
        Abandon(State::kBetweenCalls, out);
        break;
      }
    }
  }
}

}  // namespace kvd::structured
