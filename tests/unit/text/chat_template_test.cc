// The chat-template interpreter feature by feature, with expected output worked out from
// jinja2's rules (trim_blocks and lstrip_blocks on, as Hugging Face configures it).
#include "text/chat_template.h"

#include <ctime>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "text/internal/jinja/json_convert.h"
#include "text/internal/jinja/template.h"

namespace kvd::text {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using Json = nlohmann::ordered_json;

absl::StatusOr<std::string> TryRender(std::string_view source,
                                      const Json& variables = Json::object(),
                                      const Json& messages = Json::array()) {
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::Parse(source, "<s>", "</s>");
  if (!tmpl.ok()) return tmpl.status();
  return (*tmpl)->Render(messages, /*add_generation_prompt=*/false, variables);
}

std::string Render(std::string_view source, const Json& variables = Json::object(),
                   const Json& messages = Json::array()) {
  absl::StatusOr<std::string> out = TryRender(source, variables, messages);
  EXPECT_TRUE(out.ok()) << out.status() << " for " << source;
  return out.value_or("<error>");
}

std::string ErrorOf(std::string_view source, const Json& variables = Json::object()) {
  absl::StatusOr<std::string> out = TryRender(source, variables);
  EXPECT_FALSE(out.ok()) << "rendered " << *out;
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(out.status().message());
}

TEST(ChatTemplateWhitespace, MinusStripsAllWhitespaceOnThatSide) {
  EXPECT_EQ(Render("a  \n {{- 'b' -}} \n  c"), "abc");
  EXPECT_EQ(Render("a \n{%- if true -%}\n b \n{%- endif -%}\n c"), "abc");
  EXPECT_EQ(Render("a {#- note -#} b"), "ab");
}

TEST(ChatTemplateWhitespace, TrimBlocksDropsOneNewlineAfterBlockTags) {
  EXPECT_EQ(Render("{% if true %}\nx\n{% endif %}\ny"), "x\ny");
  EXPECT_EQ(Render("{% if true %}\n\nx{% endif %}"), "\nx");
  EXPECT_EQ(Render("{# c #}\nx"), "x");
  // Not after output tags.
  EXPECT_EQ(Render("{{ 'a' }}\nb"), "a\nb");
}

TEST(ChatTemplateWhitespace, LstripBlocksDropsIndentationBeforeBlockTags) {
  EXPECT_EQ(Render("  {% if true %}\n  x\n  {% endif %}\n"), "  x\n");
  EXPECT_EQ(Render("  {# c #}\nx"), "x");
  // Only at the start of a line, and not before output tags.
  EXPECT_EQ(Render("a  {% if true %}b{% endif %}"), "a  b");
  EXPECT_EQ(Render("  {{ 'v' }}\n"), "  v");
  // `+` keeps the indentation.
  EXPECT_EQ(Render("  {%+ if true %}y{% endif %}"), "  y");
}

TEST(ChatTemplateWhitespace, FinalNewlineDroppedAndNewlinesNormalized) {
  EXPECT_EQ(Render("a\n"), "a");
  EXPECT_EQ(Render("a\n\n"), "a\n");
  EXPECT_EQ(Render("a\r\nb\rc"), "a\nb\nc");
}

TEST(ChatTemplateWhitespace, RawBlocksAreLiteral) {
  EXPECT_EQ(Render("{% raw %}{{ not parsed }}{% endraw %}!"), "{{ not parsed }}!");
  EXPECT_EQ(Render("a \n{%- raw -%} \n {% x %} \n{%- endraw %}\nb"), "a{% x %}b");
}

TEST(ChatTemplateLoops, LoopVariables) {
  EXPECT_EQ(Render("{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}"
                   "{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.length }}"
                   "{% if loop.first %}F{% endif %}{% if loop.last %}L{% endif %}{{ x }} "
                   "{% endfor %}"),
            "10323Fa 21213b 32103Lc ");
  EXPECT_EQ(Render("{% for x in [1, 2, 3] %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}"),
            "[|2][1|3][2|]");
  EXPECT_EQ(Render("{% for x in [1, 2, 3] %}{{ loop.cycle('o', 'e') }}{% endfor %}"), "oeo");
}

TEST(ChatTemplateLoops, UnpackingFilterElseBreakContinue) {
  EXPECT_EQ(Render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
                   Json{{"d", Json{{"b", 1}, {"a", 2}}}}),
            "b=1;a=2;");
  EXPECT_EQ(Render("{% for x in xs if x > 1 %}{{ loop.index }}/{{ loop.length }}:{{ x }} "
                   "{% endfor %}",
                   Json{{"xs", {1, 2, 3}}}),
            "1/2:2 2/2:3 ");
  EXPECT_EQ(Render("{% for x in [] %}no{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(Render("{% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}"
                   "{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "13");
  EXPECT_EQ(
      Render("{% for c in 'hé' %}[{{ c }}]{% endfor %}{% for k in {'a': 1} %}{{ k }}{% endfor %}"),
      "[h][é]a");
}

TEST(ChatTemplateLoops, AssignmentsDoNotLeakOutOfLoops) {
  EXPECT_EQ(Render("{% set y = 0 %}{% for i in [1, 2] %}{% set y = i %}{% endfor %}{{ y }}"), "0");
  EXPECT_EQ(Render("{% for i in [1, 2, 3] %}{% if not loop.first %}{{ y }}{% endif %}"
                   "{% set y = i %}{% endfor %}"),
            "");
}

TEST(ChatTemplateStatements, NamespaceCarriesStateOutOfLoops) {
  EXPECT_EQ(Render("{% set ns = namespace(total=0, seen=false) %}{% for i in range(4) %}"
                   "{% set ns.total = ns.total + i %}{% endfor %}{{ ns.total }} {{ ns.seen }} "
                   "{{ ns.missing is defined }}"),
            "6 False False");
  EXPECT_THAT(ErrorOf("{% set x = 1 %}{% set x.a = 2 %}"), HasSubstr("non-namespace"));
}

TEST(ChatTemplateStatements, SetForms) {
  EXPECT_EQ(Render("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(Render("{% set t = 1, 2 %}{{ t }}"), "(1, 2)");
  EXPECT_EQ(Render("{% set x %}  a {{ 1 }}\n{% endset %}[{{ x }}]"), "[  a 1\n]");
  EXPECT_EQ(Render("{% if true %}{% set x = 5 %}{% endif %}{{ x }}"), "5");
  EXPECT_EQ(Render("{% generation %}gen{% endgeneration %}"), "gen");
}

TEST(ChatTemplateStatements, Macros) {
  EXPECT_EQ(Render("{% macro f(a, b=2) %}{{ a }}-{{ b }}{% endmacro %}"
                   "{{ f(1) }} {{ f(1, b=3) }} {{ f(b=5, a=0) }} [{{ f() }}]"),
            "1-2 1-3 0-5 [-2]");
  EXPECT_EQ(Render("{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}"
                   "{{ r(3) }}"),
            "321");
  EXPECT_EQ(Render("{% set g = 'G' %}{% macro f() %}{{ g }}{% endmacro %}{{ f() ~ f() }}"), "GG");
  EXPECT_THAT(ErrorOf("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}"), HasSubstr("at most 1"));
}

TEST(ChatTemplateExpressions, LiteralsAndPrinting) {
  EXPECT_EQ(Render("{{ true }} {{ False }} {{ none }} {{ 1.0 }} {{ 2.5e-7 }} {{ 1e16 }} {{ 42 }}"),
            "True False None 1.0 2.5e-07 1e+16 42");
  EXPECT_EQ(Render("{{ [1, 'a', none, true, 1.5, {'k': \"it's\"}] }}"),
            "[1, 'a', None, True, 1.5, {'k': \"it's\"}]");
  EXPECT_EQ(Render("{{ (1,) }} {{ () }} {{ 'a\\tb\\u00e9\\x41' }}"), "(1,) () a\tbéA");
  EXPECT_EQ(Render("{{ 'x' 'y' }}"), "xy");
  EXPECT_EQ(Render("{{ x }}", Json{{"x", 0.1}}), "0.1");
}

TEST(ChatTemplateExpressions, Arithmetic) {
  EXPECT_EQ(Render("{{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }} "
                   "{{ 2 ** -1 }} {{ 1 + 1.5 }} {{ 10 / 5 }} {{ 5.0 // 2 }}"),
            "3.5 3 -4 2 1024 0.5 2.5 2.0 2.0");
  EXPECT_EQ(Render("{{ 'ab' * 2 }} {{ [1] + [2] }} {{ 'a' ~ 1 ~ none ~ true }} {{ 'a' + 'b' }}"),
            "abab [1, 2] a1NoneTrue ab");
  EXPECT_EQ(Render("{{ '%s-%d' % ('a', 3) }} {{ '{}-{x}'.format(1, x=2) }}"), "a-3 1-2");
  EXPECT_THAT(ErrorOf("{{ 'a' + 1 }}"), HasSubstr("unsupported operand type(s) for +"));
  EXPECT_THAT(ErrorOf("{{ 1 / 0 }}"), HasSubstr("division by zero"));
  EXPECT_THAT(ErrorOf("{{ 9223372036854775807 + 1 }}"), HasSubstr("overflow"));
}

TEST(ChatTemplateExpressions, ComparisonsAndLogic) {
  EXPECT_EQ(Render("{{ 1 == 1.0 }} {{ true == 1 }} {{ '1' == 1 }} {{ [1, 2] < [1, 3] }} "
                   "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}"),
            "True True False True True False");
  EXPECT_EQ(Render("{{ 'x' in 'axb' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 1 not in [1] }} "
                   "{{ not 1 in [1] }}"),
            "True True True False False");
  EXPECT_EQ(Render("{{ 0 or 'b' }} {{ 'a' and 'b' }} {{ [] and 1 }} {{ 'y' if 0 else 'n' }} "
                   "[{{ 'y' if false }}]"),
            "b b [] n []");
  EXPECT_THAT(ErrorOf("{{ [1] < 'a' }}"), HasSubstr("'<' not supported"));
}

TEST(ChatTemplateExpressions, IndexingAndSlicing) {
  const Json vars = {{"xs", {1, 2, 3}}, {"s", "héllo"}};
  EXPECT_EQ(Render("{{ xs[0] }} {{ xs[-1] }} {{ xs[1:] }} {{ xs[:-1] }} {{ xs[::-1] }} "
                   "{{ xs[5:] }} {{ xs.1 }}",
                   vars),
            "1 3 [2, 3] [1, 2] [3, 2, 1] [] 2");
  EXPECT_EQ(
      Render("{{ s[1] }} {{ s[1:3] }} {{ s[::-1] }} {{ s|length }} {{ 'abcdef'[1:5:2] }}", vars),
      "é él olléh 5 bd");
  EXPECT_EQ(Render("[{{ xs[7] }}][{{ {'a': 1}['b'] }}][{{ none.x }}]", vars), "[][][]");
}

TEST(ChatTemplateExpressions, AttributeLookupPrefersMethodsThenKeys) {
  const Json vars = {{"d", Json{{"content", "c"}, {"items", 5}}}};
  EXPECT_EQ(Render("{{ d.content }} {{ d['items'] }} {{ d.items()|list }} {{ d.get('x', 3) }} "
                   "{{ d.get('x') }} {{ d.keys()|list }} {{ d.values()|list }}",
                   vars),
            "c 5 [('content', 'c'), ('items', 5)] 3 None ['content', 'items'] ['c', 5]");
}

TEST(ChatTemplateUndefined, BehavesLikeJinjaDefaultUndefined) {
  EXPECT_EQ(Render("[{{ missing }}]{{ missing is defined }}{{ missing is undefined }}"
                   "{% if not missing %}F{% endif %}{% for x in missing %}x{% endfor %}"
                   "{{ missing|length }}{{ missing|default('d') }}"),
            "[]FalseTrueF0d");
  EXPECT_EQ(Render("{{ d.nope is defined }} [{{ d.nope }}]", Json{{"d", Json::object()}}),
            "False []");
  EXPECT_EQ(ErrorOf("{{ missing.attr }}"), "1:4: 'missing' is undefined");
  EXPECT_EQ(ErrorOf("{{ d.a.b }}", Json{{"d", Json::object()}}),
            "1:4: 'dict object' has no attribute 'a'");
  EXPECT_EQ(ErrorOf("{{ missing() }}"), "1:4: 'missing' is undefined");
  EXPECT_THAT(ErrorOf("{{ missing + 1 }}"), HasSubstr("'missing' is undefined"));
}

TEST(ChatTemplateTests, IsTests) {
  EXPECT_EQ(Render("{{ 'a' is string }} {{ 1 is number }} {{ true is number }} "
                   "{{ true is integer }} {{ 1 is integer }} {{ 1.5 is float }} "
                   "{{ true is boolean }} {{ none is none }} {{ {} is mapping }} "
                   "{{ [] is iterable }} {{ 'x' is sequence }} {{ 1 is iterable }}"),
            "True True True False True True True True True True True False");
  EXPECT_EQ(Render("{{ true is true }} {{ 1 is true }} {{ false is false }} {{ 2 is even }} "
                   "{{ 3 is odd }} {{ 6 is divisibleby 3 }} {{ 1 is eq 1 }} "
                   "{{ 'a' is equalto('a') }} {{ 'a' is in ['a'] }} {{ x is not defined }}"),
            "True False True True True True True True True True");
}

TEST(ChatTemplateFilters, Text) {
  EXPECT_EQ(Render("[{{ '  x \n'|trim }}][{{ 'xxaxx'|trim('x') }}] {{ 'abc'|upper }} "
                   "{{ 'ABC'|lower }} {{ 'hELLO wORLD'|capitalize }} {{ 'hello wORLD-x'|title }} "
                   "{{ 'xyx'|replace('x', 'z') }} {{ 'xyx'|replace('x', 'z', 1) }}"),
            "[x][a] ABC abc Hello world Hello World-X zyz zyx");
  EXPECT_EQ(Render("{{ 'a\nb'|indent(2) }}|{{ 'a\n\nb'|indent(2, true) }}|"
                   "{{ 'a\n\nb'|indent(2, blank=true) }}"),
            "a\n  b|  a\n\n  b|a\n  \n  b");
  EXPECT_EQ(Render("{{ '<a&b>\"\\''|e }} {{ '<x>'|safe }} {{ 'one two  three'|wordcount }} "
                   "{{ 12|string }} {{ '%s!'|format('hi') }}"),
            "&lt;a&amp;b&gt;&#34;&#39; <x> 3 12 hi!");
}

TEST(ChatTemplateFilters, Numbers) {
  EXPECT_EQ(
      Render("{{ 3|float }} {{ '3.5'|float }} {{ 'x'|int }} {{ ' 42 '|int }} {{ 3.7|int }} "
             "{{ '2.9'|int }} {{ -3|abs }} {{ 2.5|round }} {{ 3.14159|round(2) }} "
             "{{ 2.1|round(method='ceil') }} {{ 'x'|int(7) }} {{ 15|round(-1) }} {{ 3|round }}"),
      "3.0 3.5 0 42 3 2 3 2.0 3.14 3.0 7 20 3");
}

TEST(ChatTemplateFilters, NumbersParseAndRoundAsPythonDoes) {
  // float() refuses hexadecimal, so '0x1A'|int falls back to the default; int() takes a base.
  EXPECT_EQ(Render("{{ '0x1A'|int }} {{ '0x1A'|float }} {{ 'ff'|int(base=16) }} "
                   "{{ '0x1A'|int(base=16) }} {{ '12'|int(7, 8) }}"),
            "0 0.0 255 26 10");
  // round() works on the exact binary value: 2.675 is stored just below 2.675.
  EXPECT_EQ(Render("{{ 2.675|round(2) }} {{ 0.125|round(2) }} {{ 1.005|round(2) }}"),
            "2.67 0.12 1.0");
}

TEST(ChatTemplateFilters, Sequences) {
  const Json vars = {
      {"ms", Json::array({Json{{"r", "u"}, {"n", 2}}, Json{{"r", "a"}, {"n", 1}}, Json{{"n", 3}}})},
      {"d", Json{{"b", 1}, {"A", 2}}}};
  EXPECT_EQ(Render("{{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true) }} "
                   "{{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', 'c']|sort(case_sensitive=true) }} "
                   "{{ ms|sort(attribute='n')|map(attribute='n')|list }}",
                   vars),
            "[1, 2, 3] [3, 2, 1] ['A', 'b', 'c'] ['A', 'b', 'c'] [1, 2, 3]");
  EXPECT_EQ(Render("{{ ms|map(attribute='r')|join(',') }} {{ ms|selectattr('r')|list|length }} "
                   "{{ ms|selectattr('r', 'equalto', 'u')|map(attribute='n')|first }} "
                   "{{ ms|rejectattr('r')|map(attribute='n')|list }} "
                   "{{ [1, 2, 3]|select('odd')|list }} {{ [1, 2, 3]|reject('odd')|list }} "
                   "{{ [1, 2]|map('string')|list }}",
                   vars),
            "u,a, 2 2 [3] [1, 3] [2] ['1', '2']");
  EXPECT_EQ(Render("{{ d|items|list }} {{ d|dictsort }} {{ d|dictsort(reverse=true) }} "
                   "{{ d|length }} {{ d|list }}",
                   vars),
            "[('b', 1), ('A', 2)] [('A', 2), ('b', 1)] [('b', 1), ('A', 2)] 2 ['b', 'A']");
  EXPECT_EQ(Render("{{ [1, 2, 3]|first }} {{ 'abc'|last }} {{ [1, 2]|reverse|list }} "
                   "{{ 'abc'|reverse }} {{ 'ab'|list }} {{ ['b', 'A', 'a']|unique|list }} "
                   "{{ [1, 3, 2]|max }} {{ ['b', 'A']|min }} {{ [1, 2, 3]|sum }} "
                   "{{ ms|sum(attribute='n') }} {{ [1, 2]|count }} {{ ['a', 'b']|join(', ') }}",
                   vars),
            "1 c [2, 1] cba ['a', 'b'] ['b', 'A'] 3 A 6 6 2 a, b");
}

TEST(ChatTemplateFilters, ToJsonMatchesPythonJsonDumps) {
  const Json vars = {{"x", Json{{"z", 1}, {"a", Json::array({true, nullptr, 2.0, "é\n\"<\x01"})}}}};
  EXPECT_EQ(Render("{{ x|tojson }}", vars), R"({"z": 1, "a": [true, null, 2.0, "é\n\"<\u0001"]})");
  EXPECT_EQ(Render("{{ x|tojson(sort_keys=true) }}", vars),
            R"({"a": [true, null, 2.0, "é\n\"<\u0001"], "z": 1})");
  EXPECT_EQ(Render("{{ [1, [2, []], {}]|tojson(indent=2) }}"),
            "[\n  1,\n  [\n    2,\n    []\n  ],\n  {}\n]");
  EXPECT_EQ(Render("{{ {'a': (1, 2)}|tojson(indent=1) }}"), "{\n \"a\": [\n  1,\n  2\n ]\n}");
  EXPECT_EQ(Render("{{ 'x'|tojson }} {{ none|tojson }} {{ 1.5e300|tojson }}"),
            "\"x\" null 1.5e+300");
  EXPECT_THAT(ErrorOf("{{ missing|tojson }}"), HasSubstr("not JSON serializable"));
}

TEST(ChatTemplateMethods, StringMethods) {
  EXPECT_EQ(Render("[{{ '  x  '.strip() }}][{{ '--x--'.lstrip('-') }}][{{ '--x--'.rstrip('-') }}]"
                   "{{ 'ab'.startswith(('x', 'a')) }} {{ 'ab'.endswith('b') }} "
                   "{{ 'ab'.startswith('b') }}"),
            "[x][x--][--x]True True False");
  EXPECT_EQ(Render("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(none, 1) }} "
                   "{{ 'a-b-c'.rsplit('-', 1) }} {{ 'a</think>b'.split('</think>')[-1] }}"),
            "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c'] ['a-b', 'c'] b");
  EXPECT_EQ(
      Render("{{ 'AbC'.upper() }} {{ 'AbC'.lower() }} {{ 'hello world'.title() }} "
             "{{ 'hELLO'.capitalize() }} {{ 'aXa'.replace('a', 'b') }} {{ '-'.join(['a', 'b']) }} "
             "{{ 'héb'.find('b') }} {{ 'abcb'.count('b') }} {{ 'x'.find('y') }}"),
      "ABC abc Hello World Hello bXb a-b 2 2 -1");
  EXPECT_EQ(Render("{{ [1, 2, 1].count(1) }} {{ ['a', 'b'].index('b') }}"), "2 1");
}

TEST(ChatTemplateGlobals, RangeDictNamespaceStrftime) {
  EXPECT_EQ(Render("{{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} "
                   "{{ dict(a=1, b='x') }} {{ namespace(v=2).v }}"),
            "[0, 1, 2] [1, 4, 7] [5, 3, 1] {'a': 1, 'b': 'x'} 2");
  // HF's strftime_now formats the local time; the year only changes at new year.
  auto year = [] {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    return std::to_string(local.tm_year + 1900);
  };
  const std::string before = year();
  const std::string rendered = Render("{{ strftime_now('%Y') }}");
  EXPECT_TRUE(rendered == before || rendered == year()) << rendered;
}

TEST(ChatTemplateErrors, RaiseExceptionCarriesItsMessageVerbatim) {
  EXPECT_EQ(ErrorOf("{% if true %}{{ raise_exception('Roles must alternate ' ~ 1) }}{% endif %}"),
            "Roles must alternate 1");
}

TEST(ChatTemplateErrors, ParseErrorsNameLineAndColumn) {
  auto parse_error = [](std::string_view source) {
    absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::Parse(source, "", "");
    EXPECT_FALSE(tmpl.ok());
    EXPECT_EQ(tmpl.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(tmpl.status().message());
  };
  EXPECT_EQ(parse_error("line one\n  {{ x | nosuchfilter }}"),
            "chat template: 2:10: no filter named 'nosuchfilter'");
  EXPECT_EQ(parse_error("{% if x is nosuchtest %}{% endif %}"),
            "chat template: 1:12: no test named 'nosuchtest'");
  EXPECT_EQ(parse_error("{% if x %}\nunclosed"),
            "chat template: 2:9: unexpected end of template, expected 'elif'");
  EXPECT_EQ(parse_error("{{ (1 + }}"),
            "chat template: 1:9: expected an expression, got end of "
            "print statement");
  EXPECT_EQ(parse_error("{% include 'x' %}"),
            "chat template: 1:4: unknown or unsupported tag 'include'");
  EXPECT_EQ(parse_error("{% endfor %}"), "chat template: 1:4: unexpected 'endfor'");
  EXPECT_EQ(parse_error("{% break %}"), "chat template: 1:4: 'break' outside of a loop");
  EXPECT_EQ(parse_error("{{ 'open"), "chat template: 1:4: unterminated string");
  EXPECT_EQ(parse_error("ok {# never closed"), "chat template: 1:4: unterminated comment");
  EXPECT_EQ(parse_error("{{ x }"), "chat template: 1:1: unterminated '{{' expression");
}

TEST(ChatTemplateErrors, RuntimeErrorsNameTheFailingExpression) {
  EXPECT_EQ(ErrorOf("line\n{{ 'a' ~ (1 + 'b') }}"),
            "2:13: unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(ErrorOf("{% for x in 5 %}{% endfor %}"), "1:13: 'int' object is not iterable");
  EXPECT_EQ(ErrorOf("{{ 'x'.split(1) }}"), "1:4: split separator must be str or None, not int");
}

TEST(ChatTemplateLimits, LoopIterationsAreBounded) {
  // range() counts what it produces, so a huge range fails before allocating.
  EXPECT_EQ(ErrorOf("{% for i in range(2000000) %}{% endfor %}"),
            "1:13: template exceeded 1000000 loop iterations");
  absl::StatusOr<std::unique_ptr<internal::jinja::Template>> tmpl =
      internal::jinja::Template::Parse(
          "{% for i in xs %}{% for j in xs %}{% for k in xs %}{% endfor %}{% endfor %}{% endfor "
          "%}");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  internal::jinja::ValueDict variables;
  variables.Set(internal::jinja::Value::String("xs"),
                internal::jinja::Value::List(internal::jinja::ValueList(10)));
  internal::jinja::RenderLimits limits;
  limits.max_loop_iterations = 1110;  // 10 + 100 + 1000
  EXPECT_TRUE((*tmpl)->Render(variables, limits).ok());
  limits.max_loop_iterations = 1109;
  // The innermost loop's `for` keyword runs out.
  EXPECT_EQ(std::string((*tmpl)->Render(variables, limits).status().message()),
            "1:38: template exceeded 1109 loop iterations");
}

TEST(ChatTemplateLimits, RecursionIsBounded) {
  EXPECT_THAT(ErrorOf("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"),
              HasSubstr("macro calls nested deeper than 64"));
  EXPECT_THAT(ErrorOf("{% set ns = namespace(x=[]) %}{% for i in range(300) %}"
                      "{% set ns.x = [ns.x] %}{% endfor %}"),
              HasSubstr("nested deeper than"));
  const std::string deep = std::string(500, '(') + "1" + std::string(500, ')');
  EXPECT_THAT(TryRender("{{ " + deep + " }}").status().message(), HasSubstr("nested too deeply"));
  std::string chain = "{{ 1";
  for (int i = 0; i < 1000; ++i) chain += " + 1";
  EXPECT_THAT(TryRender(chain + " }}").status().message(), HasSubstr("nested too deeply"));
}

TEST(ChatTemplateLimits, OutputAndStringSizesAreBounded) {
  EXPECT_THAT(ErrorOf("{{ 'x' * 100000000 }}"), HasSubstr("longer than"));
  absl::StatusOr<std::unique_ptr<internal::jinja::Template>> tmpl =
      internal::jinja::Template::Parse("{% for i in range(100) %}0123456789{% endfor %}");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  internal::jinja::RenderLimits limits;
  limits.max_output_bytes = 500;
  absl::StatusOr<std::string> out = (*tmpl)->Render(internal::jinja::ValueDict(), limits);
  EXPECT_THAT(out.status().message(), HasSubstr("output exceeded 500 bytes"));
  limits.max_output_bytes = 1000;
  out = (*tmpl)->Render(internal::jinja::ValueDict(), limits);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->size(), 1000u);
}

TEST(ChatTemplateRender, StandardVariablesAndKeyOrder) {
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::Parse(
      "{{ bos_token }}{{ messages[0] }}{{ add_generation_prompt }}{{ tools }}{{ documents }}"
      "{{ eos_token }}{{ extra_flag }}",
      "<s>", "</s>");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  const Json messages = Json::array({Json{{"role", "user"}, {"content", "hi"}}});
  absl::StatusOr<std::string> out = (*tmpl)->Render(messages, true, Json{{"extra_flag", 7}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "<s>{'role': 'user', 'content': 'hi'}TrueNoneNone</s>7");
  // nlohmann::json sorts object keys; the ordered overload keeps the client's order.
  out = (*tmpl)->Render(nlohmann::json::parse(R"([{"role": "user", "content": "hi"}])"), false);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "<s>{'content': 'hi', 'role': 'user'}FalseNoneNone</s>");
}

}  // namespace
}  // namespace kvd::text
