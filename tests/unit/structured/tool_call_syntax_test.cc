#include "structured/tool_call_syntax.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "structured/constraint_spec.h"
#include "tests/unit/structured/grammar_test_support.h"

namespace kvd::structured {
namespace {

using testing::Accepts;
using ::testing::HasSubstr;
using testing::IsPrefix;

struct Call {
  std::string name;
  std::string arguments;
  friend bool operator==(const Call&, const Call&) = default;
};
struct Whole {
  std::string content;
  std::vector<Call> calls;
};

// `text` fed in pieces of `piece` bytes (0: at once), the pieces joined back.
Whole Parse(ToolCallSyntax syntax, std::string_view text, size_t piece = 0) {
  ToolCallStream stream(syntax);
  Whole whole;
  auto add = [&](const ParsedOutput& out) {
    whole.content += out.content;
    for (const ToolCallFragment& fragment : out.calls) {
      if (!fragment.name.empty()) {
        EXPECT_EQ(fragment.index, static_cast<int32_t>(whole.calls.size()));
        whole.calls.push_back({fragment.name, ""});
      }
      ASSERT_EQ(fragment.index + 1, static_cast<int32_t>(whole.calls.size()));
      whole.calls.back().arguments += fragment.arguments;
    }
  };
  if (piece == 0) piece = text.size() + 1;
  for (size_t at = 0; at < text.size(); at += piece) add(stream.Feed(text.substr(at, piece)));
  add(stream.Finish());
  EXPECT_EQ(stream.calls(), static_cast<int32_t>(whole.calls.size()));
  return whole;
}

// The parse of `text` is the same whatever pieces it arrives in.
Whole ParseEveryWay(ToolCallSyntax syntax, std::string_view text) {
  const Whole whole = Parse(syntax, text);
  for (size_t piece : {1, 2, 3, 5, 7}) {
    const Whole pieces = Parse(syntax, text, piece);
    EXPECT_EQ(pieces.content, whole.content) << "pieces of " << piece;
    EXPECT_EQ(pieces.calls, whole.calls) << "pieces of " << piece;
  }
  return whole;
}

TEST(ToolCallSyntaxTest, DetectsTheSyntaxFromTheTemplate) {
  EXPECT_EQ(DetectToolCallSyntax("{% for tool in tools %}<tool_call>{{ tool }}{% endfor %}"),
            ToolCallSyntax::kHermes);
  EXPECT_EQ(DetectToolCallSyntax(R"(Respond with {"name": function name, "parameters": dictionary)"
                                 R"( of argument name and its value} {{ tools }})"),
            ToolCallSyntax::kLlama3Json);
  EXPECT_EQ(DetectToolCallSyntax("{{ tools }} call them somehow"), std::nullopt);
  EXPECT_TRUE(TemplateTakesTools("{% if tools %}x{% endif %}"));
  EXPECT_FALSE(TemplateTakesTools("{{ messages[0].content }}"));
  EXPECT_FALSE(TemplateTakesTools("You have no tools. {{ custom_tools }}{% set tools_x = 1 %}"));
  EXPECT_TRUE(TemplateTakesTools("{%- for t in tools -%}"));
  EXPECT_FALSE(TemplateTakesTools("{{ unclosed tool"));
  EXPECT_EQ(ToolCallSyntaxNamed("hermes"), ToolCallSyntax::kHermes);
  EXPECT_EQ(ToolCallSyntaxNamed("llama3_json"), ToolCallSyntax::kLlama3Json);
  EXPECT_EQ(ToolCallSyntaxNamed("mistral"), std::nullopt);
}

TEST(ToolCallStreamTest, HermesCallsAfterContent) {
  const Whole whole = ParseEveryWay(
      ToolCallSyntax::kHermes,
      "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris }\\\"\", \"days\": [1, {\"x\": 2}]}}\n</tool_call>\n<tool_call>\n{\"name\": "
      "\"now\", \"arguments\": {}}\n</tool_call>\n");
  EXPECT_EQ(whole.content, "Let me look.");
  ASSERT_EQ(whole.calls.size(), 2u);
  EXPECT_EQ(whole.calls[0],
            (Call{"get_weather", R"({"city": "Paris }\"", "days": [1, {"x": 2}]})"}));
  EXPECT_EQ(whole.calls[1], (Call{"now", "{}"}));
}

TEST(ToolCallStreamTest, HermesTextWithoutCallsIsAllContent) {
  for (const char* text : {"  plain answer\n\n", "a < b and <tool but not a call", "<tool_cal",
                           "x <tool_call> not json </tool_call> y",
                           "<tool_call>{\"name\": 3, \"arguments\": {}}</tool_call>"}) {
    const Whole whole = ParseEveryWay(ToolCallSyntax::kHermes, text);
    EXPECT_EQ(whole.content, text);
    EXPECT_TRUE(whole.calls.empty()) << text;
  }
}

TEST(ToolCallStreamTest, HermesAcceptsParametersAndSpacing) {
  const Whole whole = ParseEveryWay(
      ToolCallSyntax::kHermes,
      "<tool_call>{ \"name\" :\"f\\u00e9\",\n \"parameters\":{\"a\":1} }</tool_call>then text");
  ASSERT_EQ(whole.calls.size(), 1u);
  EXPECT_EQ(whole.calls[0], (Call{"f\xc3\xa9", R"({"a":1})"}));
  EXPECT_EQ(whole.content, "then text");
}

TEST(ToolCallStreamTest, HermesCallCutShortKeepsWhatWasWritten) {
  const Whole whole = ParseEveryWay(ToolCallSyntax::kHermes,
                                    "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2");
  ASSERT_EQ(whole.calls.size(), 1u);
  EXPECT_EQ(whole.calls[0], (Call{"f", R"({"a": [1, 2)"}));
  EXPECT_EQ(whole.content, "");
}

TEST(ToolCallStreamTest, Llama3JsonCallsSeparatedBySemicolons) {
  const Whole whole = ParseEveryWay(ToolCallSyntax::kLlama3Json,
                                    " {\"name\": \"a\", \"parameters\": {\"q\": \"x;y\"}}; "
                                    "{\"name\": \"b\", \"parameters\": {}}");
  EXPECT_EQ(whole.content, "");
  ASSERT_EQ(whole.calls.size(), 2u);
  EXPECT_EQ(whole.calls[0], (Call{"a", R"({"q": "x;y"})"}));
  EXPECT_EQ(whole.calls[1], (Call{"b", "{}"}));
}

TEST(ToolCallStreamTest, Llama3JsonTextIsContent) {
  for (const char* text : {"The answer is {\"name\": \"a\"}", "{\"not\": \"a call\"}", "  "}) {
    const Whole whole = ParseEveryWay(ToolCallSyntax::kLlama3Json, text);
    EXPECT_EQ(whole.content, text);
    EXPECT_TRUE(whole.calls.empty()) << text;
  }
}

TEST(ToolCallStreamTest, Llama3JsonTextAfterASeparatorKeepsTheSeparator) {
  const Whole whole =
      ParseEveryWay(ToolCallSyntax::kLlama3Json, "{\"name\": \"a\", \"parameters\": {}};   hello");
  ASSERT_EQ(whole.calls.size(), 1u);
  EXPECT_EQ(whole.content, ";hello");
  const Whole failed = ParseEveryWay(ToolCallSyntax::kLlama3Json,
                                     "{\"name\": \"a\", \"parameters\": {}}; {\"name\": 5}");
  ASSERT_EQ(failed.calls.size(), 1u);
  EXPECT_EQ(failed.content, ";{\"name\": 5}");
}

TEST(ToolCallStreamTest, ContentIsTheTextOutsideCallsTrimmed) {
  const std::string call = "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";
  EXPECT_EQ(ParseEveryWay(ToolCallSyntax::kHermes, "A  " + call + "\n\n B \n").content,
            "A  \n\n B");
  EXPECT_EQ(ParseEveryWay(ToolCallSyntax::kHermes, "\n" + call + "\n" + call + "\n").content, "");
  EXPECT_EQ(ParseEveryWay(ToolCallSyntax::kHermes, " " + call + " B").content, "B");
}

TEST(ToolCallStreamTest, AHeaderPastTheBoundIsContentHoweverItArrives) {
  const std::string text = "<tool_call>{\"name\": \"" +
                           std::string(ToolCallStream::kMaxCallHeaderBytes, 'a') +
                           "\", \"arguments\": {}}</tool_call>";
  for (size_t piece : {size_t{0}, size_t{1}, size_t{1000}}) {
    const Whole whole = Parse(ToolCallSyntax::kHermes, text, piece);
    EXPECT_EQ(whole.content, text) << piece;
    EXPECT_TRUE(whole.calls.empty()) << piece;
  }
}

TEST(ToolCallStreamTest, AHeaderThatNeverEndsBecomesContent) {
  const std::string text =
      "<tool_call>{\"name\": \"" + std::string(ToolCallStream::kMaxCallHeaderBytes, 'a');
  const Whole whole = Parse(ToolCallSyntax::kHermes, text, 100);
  EXPECT_EQ(whole.content, text);
  EXPECT_TRUE(whole.calls.empty());
}

ToolCallGrammarSpec TwoFunctions(ToolCallSyntax syntax, bool parallel) {
  ToolCallGrammarSpec spec;
  spec.syntax = syntax;
  spec.parallel = parallel;
  spec.functions.push_back(
      {"get_weather", JsonValue::parse(R"({"type": "object", "properties": {"city": {"type":
         "string", "maxLength": 5}}, "required": ["city"], "additionalProperties": false})")});
  spec.functions.push_back({"now", JsonValue()});
  return spec;
}

TEST(ToolCallGrammarTest, HermesCallsValidateTheirArguments) {
  const Grammar grammar =
      CompileToolCalls(TwoFunctions(ToolCallSyntax::kHermes, true), JsonWhitespace::kCompact)
          .value();
  const std::string weather =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>";
  const std::string now =
      "<tool_call>\n{\"name\": \"now\", \"arguments\": {\"any\": [1]}}\n</tool_call>";
  EXPECT_TRUE(Accepts(grammar, weather));
  EXPECT_TRUE(Accepts(grammar, weather + "\n" + now));
  EXPECT_FALSE(Accepts(grammar, ""));
  EXPECT_FALSE(Accepts(grammar, "text" + weather));
  EXPECT_FALSE(Accepts(grammar, weather.substr(0, weather.size() - 1)));
  EXPECT_TRUE(IsPrefix(grammar, weather.substr(0, 20)));
  // Arguments the schema refuses: a long city, a missing one, an unknown function.
  EXPECT_FALSE(IsPrefix(grammar,
                        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                        "{\"city\": \"Lisbon"));
  EXPECT_FALSE(Accepts(grammar,
                       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                       "{}}\n</tool_call>"));
  EXPECT_FALSE(IsPrefix(grammar, "<tool_call>\n{\"name\": \"other"));

  // Every sentence parses back into its calls.
  const Whole whole = Parse(ToolCallSyntax::kHermes, weather + "\n" + now);
  ASSERT_EQ(whole.calls.size(), 2u);
  EXPECT_EQ(whole.calls[0], (Call{"get_weather", R"({"city": "Paris"})"}));
  EXPECT_EQ(whole.calls[1], (Call{"now", R"({"any": [1]})"}));
  EXPECT_EQ(whole.content, "");
}

TEST(ToolCallGrammarTest, ArgumentsAreCompactUnlessAnyWhitespaceIsAsked) {
  const std::string open = "<tool_call>\n{\"name\": \"now\", \"arguments\": {";
  const Grammar compact =
      CompileToolCalls(TwoFunctions(ToolCallSyntax::kHermes, false), JsonWhitespace::kCompact)
          .value();
  EXPECT_TRUE(Accepts(compact, open + "\"a\": [1, 2]}}\n</tool_call>"));
  EXPECT_FALSE(IsPrefix(compact, open + "\n"));
  EXPECT_FALSE(IsPrefix(compact, open + "\"a\":\n"));
  const Grammar any =
      CompileToolCalls(TwoFunctions(ToolCallSyntax::kHermes, false), JsonWhitespace::kAny).value();
  EXPECT_TRUE(Accepts(any, open + "\n  \"a\": [\n    1\n  ]\n}}\n</tool_call>"));
}

TEST(ToolCallGrammarTest, OneCallWhenNotParallel) {
  const Grammar grammar =
      CompileToolCalls(TwoFunctions(ToolCallSyntax::kLlama3Json, false), JsonWhitespace::kCompact)
          .value();
  const std::string call = R"({"name": "now", "parameters": {}})";
  EXPECT_TRUE(Accepts(grammar, call));
  EXPECT_FALSE(IsPrefix(grammar, call + "; "));
  const Grammar parallel =
      CompileToolCalls(TwoFunctions(ToolCallSyntax::kLlama3Json, true), JsonWhitespace::kCompact)
          .value();
  EXPECT_TRUE(Accepts(parallel, call + "; " + call));
}

TEST(ToolCallGrammarTest, TextRoundTripsThroughTheConstraintSpec) {
  const ToolCallGrammarSpec spec = TwoFunctions(ToolCallSyntax::kLlama3Json, false);
  const ToolCallGrammarSpec back = ParseToolCallGrammarText(ToolCallGrammarText(spec)).value();
  EXPECT_EQ(back.syntax, spec.syntax);
  EXPECT_EQ(back.parallel, spec.parallel);
  ASSERT_EQ(back.functions.size(), 2u);
  EXPECT_EQ(back.functions[0].parameters, spec.functions[0].parameters);
  EXPECT_TRUE(back.functions[1].parameters.is_null());
  EXPECT_TRUE(
      CompileConstraint({ConstraintSpec::Kind::kToolCalls, ToolCallGrammarText(spec)}).ok());
  EXPECT_FALSE(CompileConstraint({ConstraintSpec::Kind::kToolCalls, R"({"syntax": "x"})"}).ok());
}

TEST(ToolCallGrammarTest, ArgumentsAreAlwaysAnObject) {
  ToolCallGrammarSpec spec;
  spec.functions.push_back({"empty", JsonValue::object()});
  spec.functions.push_back({"untyped", JsonValue::parse(R"({"properties": {"a": {"type":
      "integer"}}, "required": ["a"]})")});
  const Grammar grammar = CompileToolCalls(spec, JsonWhitespace::kCompact).value();
  const auto call = [](const std::string& name, const std::string& arguments) {
    return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + arguments +
           "}\n</tool_call>";
  };
  EXPECT_TRUE(Accepts(grammar, call("empty", "{\"x\": [1]}")));
  EXPECT_FALSE(IsPrefix(grammar, call("empty", "5")));
  EXPECT_TRUE(Accepts(grammar, call("untyped", "{\"a\": 1}")));
  EXPECT_FALSE(IsPrefix(grammar, call("untyped", "\"s")));

  ToolCallGrammarSpec not_object;
  not_object.functions.push_back({"s", JsonValue::parse(R"({"type": "string"})")});
  const auto refused = CompileToolCalls(not_object, JsonWhitespace::kCompact);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("'s'"));
}

TEST(ToolCallGrammarTest, AnUnsupportedParametersSchemaNamesTheFunction) {
  ToolCallGrammarSpec spec;
  spec.functions.push_back({"f", JsonValue::parse(R"({"type": "object", "properties": {"n":
      {"type": "number", "multipleOf": 2}}})")});
  const auto grammar = CompileToolCalls(spec, JsonWhitespace::kCompact);
  ASSERT_FALSE(grammar.ok());
  EXPECT_THAT(grammar.status().message(), HasSubstr("'f'"));
  EXPECT_THAT(grammar.status().message(), HasSubstr("multipleOf"));
}

}  // namespace
}  // namespace kvd::structured
