#include "structured/json_schema_grammar.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/structured/grammar_test_support.h"

namespace kvd::structured {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::ordered_json;

struct Instance {
  std::string text;
  bool valid;
};

struct SchemaCase {
  const char* name;
  const char* schema;
  std::vector<Instance> instances;
};

// Each instance decided as ajv decides it (properties written in the schema's order, whitespace
// within the bound; see json_schema_grammar.h).
const std::vector<SchemaCase>& Corpus() {
  static const auto* corpus = new std::vector<SchemaCase>{
      {"string", R"({"type": "string"})",
       {{R"("")", true},
        {R"("hello")", true},
        {R"("caf\u00e9 \"q\" \\ \/ \b\f\n\r\t")", true},
        {"\"h\xC3\xA9llo \xF0\x9F\x98\x80\"", true},
        {R"("\u20ac \uD7FF \uE000")", true},
        // Surrogate escapes are not written: JSON Schema counts a pair as one character.
        {R"("\ud83d\ude00")", false},
        {R"("\ud800")", false},
        {"\"line\nbreak\"", false},
        {"\"tab\tinside\"", false},
        {R"("\x41")", false},
        {R"("\u12")", false},
        {"\"\xC3\x28\"", false},
        {"\"\xED\xA0\x80\"", false},
        {R"(hello)", false},
        {R"("open)", false},
        {R"(1)", false}}},
      {"number", R"({"type": "number"})",
       {{"0", true}, {"-0", true}, {"12.5", true}, {"1e10", true}, {"-1.5E-3", true},
        {"01", false}, {"1.", false}, {".5", false}, {"+1", false}, {"1e", false},
        {"NaN", false}, {"\"1\"", false}}},
      {"integer", R"({"type": "integer"})",
       {{"0", true}, {"-42", true}, {"1.5", false}, {"1e3", false},
        {"9007199254740993", true}}},
      {"integer range", R"({"type": "integer", "minimum": -15, "exclusiveMaximum": 120})",
       {{"-15", true}, {"-9", true}, {"0", true}, {"7", true}, {"99", true}, {"119", true},
        {"-16", false}, {"120", false}, {"1000", false}, {"-0", false}, {"007", false}}},
      {"one-sided integer bounds", R"({"type": "integer", "minimum": 0})",
       {{"0", true}, {"9999999999999999", true}, {"-1", false}}},
      {"a bound past 16 digits", R"({"type": "integer", "maximum": 1e20})",
       {{"-9999999999999999", true}, {"12", true}}},
      {"optional properties, none given", R"({"type": "object", "properties": {"a": {}}})",
       {{"{}", true}, {"{ }", true}, {"{\n}", true}, {"{\n\n}", false}, {"{  }", false}}},
      {"zod's safe integer", R"({"type": "integer", "minimum": -9007199254740991,
                                  "maximum": 9007199254740991})",
       {{"9007199254740991", true}, {"9007199254740992", false}, {"-42", true}}},
      {"boolean and null", R"({"type": ["boolean", "null"]})",
       {{"true", true}, {"false", true}, {"null", true}, {"0", false}, {"True", false}}},
      {"object", R"({"type": "object",
                     "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                    "email": {"type": "string"}},
                     "required": ["name", "age"], "additionalProperties": false})",
       {{R"({"name":"Ann","age":3})", true},
        {R"({"name":"Ann","age":3,"email":"a@b"})", true},
        {"{\n  \"name\": \"Ann\",\n  \"age\": 3\n}", true},
        {R"({ "name" : "Ann" , "age" : 3 })", true},
        {R"({"name":"Ann"})", false},
        {R"({"name":"Ann","age":3,"extra":1})", false},
        {R"({"name":"Ann","age":"3"})", false},
        {R"({"name":"Ann","age":3,})", false},
        {R"({})", false},
        {R"([])", false}}},
      {"optional properties only", R"({"properties": {"a": {"type": "integer"},
                                                       "b": {"type": "integer"}}})",
       {{R"({})", true}, {R"({"a":1})", true}, {R"({"b":2})", true}, {R"({"a":1,"b":2})", true},
        {R"({,"b":2})", false}, {R"({"a":1,})", false}}},
      {"map", R"({"type": "object", "additionalProperties": {"type": "number"}})",
       {{R"({})", true}, {R"({"x":1,"y":2.5})", true}, {R"({"x":"1"})", false}}},
      {"enum and const", R"({"enum": ["red", 1, null, {"k": [true]}]})",
       {{R"("red")", true}, {"1", true}, {"null", true}, {R"({"k":[true]})", true},
        {R"("blue")", false}, {"2", false}}},
      {"const", R"({"const": "fixed"})", {{R"("fixed")", true}, {R"("other")", false}}},
      {"anyOf", R"({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}]})",
       {{R"("s")", true}, {"[1,2]", true}, {R"(["s"])", false}, {"1", false}}},
      {"oneOf of distinct types", R"({"oneOf": [{"type": "string"}, {"type": "integer"}]})",
       {{R"("s")", true}, {"3", true}, {"true", false}}},
      {"array bounds", R"({"type": "array", "items": {"type": "boolean"},
                           "minItems": 1, "maxItems": 3})",
       {{"[true]", true}, {"[true,false,true]", true}, {"[]", false},
        {"[true,true,true,true]", false}, {"[ true , false ]", true}}},
      {"tuple", R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
                    "items": false})",
       {{R"(["a",1])", true}, {R"(["a"])", false}, {R"([1,"a"])", false},
        {R"(["a",1,2])", false}}},
      {"recursive $ref", R"({"$defs": {"node": {"type": "object",
                               "properties": {"value": {"type": "integer"},
                                              "children": {"type": "array",
                                                           "items": {"$ref": "#/$defs/node"}}},
                               "required": ["value", "children"],
                               "additionalProperties": false}},
                             "$ref": "#/$defs/node"})",
       {{R"({"value":1,"children":[]})", true},
        {R"({"value":1,"children":[{"value":2,"children":[{"value":3,"children":[]}]}]})", true},
        {R"({"value":1,"children":[{"value":2}]})", false}}},
      {"string length", R"({"type": "string", "minLength": 2, "maxLength": 3})",
       {{R"("ab")", true}, {"\"\xC3\xA9\xC3\xA9\xC3\xA9\"", true}, {R"("a")", false},
        {R"("abcd")", false}, {R"("a\n")", true}}},
      {"pattern", R"({"type": "string", "pattern": "^[A-Z]{2}-\\d+$"})",
       {{R"("AB-12")", true}, {R"("AB-")", false}, {R"("ab-12")", false}}},
      {"unanchored pattern", R"({"type": "string", "pattern": "\\d"})",
       {{R"("abc1def")", true}, {R"("abc")", false}}},
      {"date", R"({"type": "string", "format": "date"})",
       {{R"("2024-02-29")", true}, {R"("2000-02-29")", true}, {R"("2023-02-29")", false},
        {R"("1900-02-29")", false}, {R"("2023-04-31")", false}, {R"("2023-12-31")", true},
        {R"("2023-13-01")", false}, {R"("2023-1-01")", false}}},
      {"date-time", R"({"type": "string", "format": "date-time"})",
       {{R"("2024-05-01T12:30:00Z")", true}, {R"("2024-05-01t12:30:00.25+02:00")", true},
        {R"("2024-05-01 12:30:00-0530")", true}, {R"("2024-05-01T24:00:00Z")", false},
        {R"("2024-05-01T12:30:00")", false}}},
      {"uuid", R"({"type": "string", "format": "uuid"})",
       {{R"("123e4567-e89b-12d3-a456-426614174000")", true},
        {R"("123E4567-E89B-12D3-A456-426614174000")", true},
        {R"("123e4567-e89b-12d3-a456-42661417400")", false}}},
      {"email", R"({"type": "string", "format": "email"})",
       {{R"("a.b+c@example.com")", true}, {R"("a@b")", false}, {R"("@example.com")", false}}},
      {"ipv4", R"({"type": "string", "format": "ipv4"})",
       {{R"("192.168.0.255")", true}, {R"("256.1.1.1")", false}, {R"("01.1.1.1")", false}}},
      {"zod through the openai SDK",
       R"({"type": "object",
           "properties": {"name": {"type": "string"}, "age": {"type": "number"},
                          "tags": {"type": "array", "items": {"type": "string"}},
                          "kind": {"type": "string", "enum": ["a", "b"]},
                          "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
           "required": ["name", "age", "tags", "kind", "note"],
           "additionalProperties": false,
           "$schema": "http://json-schema.org/draft-07/schema#"})",
       {{R"({"name":"x","age":1.5,"tags":["t"],"kind":"b","note":null})", true},
        {R"({"name":"x","age":1.5,"tags":[],"kind":"c","note":null})", false}}},
      {"true schema", "true", {{"[1,{\"a\":null}]", true}, {"nul", false}}},
  };
  return *corpus;
}

// Whether `text` is spaced as compact JSON: outside strings, no whitespace but one space after a
// ':' or a ','.
bool IsCompactlySpaced(const std::string& text) {
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '\n' || c == '\t' || c == '\r') {
      return false;
    } else if (c == ' ' && (i == 0 || (text[i - 1] != ':' && text[i - 1] != ','))) {
      return false;
    }
  }
  return true;
}

TEST(JsonSchemaGrammarTest, DecidesTheCorpusAsAjvDoes) {
  for (const SchemaCase& schema_case : Corpus()) {
    const absl::StatusOr<Grammar> grammar =
        CompileJsonSchema(json::parse(schema_case.schema), JsonWhitespace::kAny);
    ASSERT_TRUE(grammar.ok()) << schema_case.name << ": " << grammar.status();
    for (const Instance& instance : schema_case.instances) {
      EXPECT_EQ(testing::Accepts(*grammar, instance.text), instance.valid)
          << schema_case.name << ": " << instance.text;
    }
  }
}

TEST(JsonSchemaGrammarTest, CompactlyDecidesTheCorpusAsAjvDoesWhereItIsCompact) {
  for (const SchemaCase& schema_case : Corpus()) {
    const absl::StatusOr<Grammar> grammar =
        CompileJsonSchema(json::parse(schema_case.schema), JsonWhitespace::kCompact);
    ASSERT_TRUE(grammar.ok()) << schema_case.name << ": " << grammar.status();
    for (const Instance& instance : schema_case.instances) {
      EXPECT_EQ(testing::Accepts(*grammar, instance.text),
                instance.valid && IsCompactlySpaced(instance.text))
          << schema_case.name << ": " << instance.text;
    }
  }
}

TEST(JsonSchemaGrammarTest, WritesPropertiesInTheSchemasOrderOnly) {
  const absl::StatusOr<Grammar> grammar = CompileJsonSchema(
      json::parse(
          R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
          "required": ["a", "b"]})"),
      JsonWhitespace::kCompact);
  ASSERT_TRUE(grammar.ok());
  EXPECT_TRUE(testing::Accepts(*grammar, R"({"a":1,"b":2})"));
  EXPECT_FALSE(testing::Accepts(*grammar, R"({"b":2,"a":1})"));
}

TEST(JsonSchemaGrammarTest, CompactJsonHasOneOptionalSpaceAfterSeparatorsOnly) {
  const absl::StatusOr<Grammar> grammar = CompileJsonSchema(
      json::parse(R"({"type": "object", "properties": {"a": {"type": "array"}, "b": {}}})"),
      JsonWhitespace::kCompact);
  ASSERT_TRUE(grammar.ok());
  EXPECT_TRUE(testing::Accepts(*grammar, R"({"a":[1,2],"b":{"c":null}})"));
  EXPECT_TRUE(testing::Accepts(*grammar, R"({"a": [1, 2], "b": {"c": null}})"));
  EXPECT_TRUE(testing::Accepts(*grammar, R"({})"));
  EXPECT_FALSE(testing::IsPrefix(*grammar, "{\n"));
  EXPECT_FALSE(testing::IsPrefix(*grammar, "{ "));
  EXPECT_FALSE(testing::IsPrefix(*grammar, R"({"a" )"));
  EXPECT_FALSE(testing::IsPrefix(*grammar, R"({"a":  )"));
  EXPECT_FALSE(testing::IsPrefix(*grammar, "{\"a\":\n"));
  EXPECT_FALSE(testing::IsPrefix(*grammar, R"({"a":[1 )"));
  EXPECT_FALSE(testing::IsPrefix(*grammar, R"({"a":[ )"));
  EXPECT_FALSE(testing::IsPrefix(*grammar, R"({"a":[1],)"
                                           "\n"));
  const absl::StatusOr<Grammar> any = CompileAnyJsonObject(JsonWhitespace::kCompact);
  ASSERT_TRUE(any.ok());
  EXPECT_TRUE(testing::Accepts(*any, R"({"x": {"y": [true, "z"]}})"));
  EXPECT_FALSE(testing::IsPrefix(*any, "{\"x\": {\n"));
}

TEST(JsonSchemaGrammarTest, AnyWhitespaceIsBounded) {
  const absl::StatusOr<Grammar> grammar =
      CompileJsonSchema(json::parse(R"({"type": "array"})"), JsonWhitespace::kAny);
  ASSERT_TRUE(grammar.ok());
  const std::string indent(JsonRules::kMaxIndent, ' ');
  EXPECT_TRUE(testing::Accepts(*grammar, "[\n" + indent + "1,\n\t2 ]"));
  EXPECT_FALSE(testing::IsPrefix(*grammar, "[\n" + indent + " "));
  EXPECT_FALSE(testing::IsPrefix(*grammar, "[\n\n"));
  EXPECT_FALSE(testing::IsPrefix(*grammar, "[  "));
}

TEST(JsonSchemaGrammarTest, BoundsTheDigitsOfNumbers) {
  const absl::StatusOr<Grammar> grammar =
      CompileJsonSchema(json::parse(R"({"type": "number"})"), JsonWhitespace::kCompact);
  ASSERT_TRUE(grammar.ok());
  const std::string digits(JsonRules::kMaxDigits, '7');
  EXPECT_TRUE(testing::Accepts(*grammar, "-" + digits + "." + digits + "e-12"));
  EXPECT_FALSE(testing::IsPrefix(*grammar, digits + "7"));
  EXPECT_FALSE(testing::IsPrefix(*grammar, "1." + digits + "7"));
  EXPECT_FALSE(testing::IsPrefix(*grammar, "1e308"));
}

TEST(JsonSchemaGrammarTest, AnyJsonObject) {
  const absl::StatusOr<Grammar> grammar = CompileAnyJsonObject(JsonWhitespace::kCompact);
  ASSERT_TRUE(grammar.ok());
  EXPECT_TRUE(testing::Accepts(*grammar, R"({"a":[1,{"b":null}],"c":"d"})"));
  EXPECT_TRUE(testing::Accepts(*grammar, "{}"));
  EXPECT_FALSE(testing::Accepts(*grammar, "[1]"));
  EXPECT_FALSE(testing::Accepts(*grammar, R"({"a":1,"a"})"));
}

TEST(JsonSchemaGrammarTest, RefusesWhatItCannotGuaranteeNamingTheKeyword) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"type": "number", "minimum": 0})", "'minimum' at '#' is supported only on integers"},
      {R"({"type": "integer", "minimum": 3, "maximum": 2})", "admit no integer"},
      {R"({"type": "integer", "multipleOf": 2})", "'multipleOf'"},
      {R"({"type": "object", "patternProperties": {}})", "'patternProperties'"},
      {R"({"type": "string", "format": "hostname"})", "'hostname' is not supported"},
      {R"({"properties": {"a": {"type": "string", "maxLength": 5000}}})",
       "'maxLength' at '#/properties/a' is over 1000"},
      {R"({"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 2}]})", "distinct types"},
      {R"({"$ref": "#/$defs/missing"})", "points at nothing"},
      {R"({"$ref": "http://example.com/schema"})", "within the schema"},
      {R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})", "'b'"},
      {R"({"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "string"}})",
       "without 'properties'"},
      {R"({"properties": {"a": false}})", "'false' at '#/properties/a'"},
      {R"({"type": "text"})", "unknown type"},
      {R"({"type": "string", "enum": ["a", "bbbb"], "maxLength": 2})", "'maxLength' at '#' beside 'enum'"},
      {R"({"required": ["a"], "anyOf": [{"properties": {"a": {}}}]})", "'required' at '#' beside 'anyOf'"},
      {R"({"minimum": 5})", "supported only on integers"},
      {R"({"type": "integer", "format": "int32"})", "on a number"},
      {R"({"oneOf": [{"const": 2.0}, {"type": "integer"}]})", "distinct types"},
      {R"({"type": "array", "items": false, "minItems": 1})", "admits no array"},
      {R"({"uniqueItems": true})", "'uniqueItems'"},
      {R"({"$ref": "#"})", "can reach itself"},
      {R"({"enum": [1], "type": "string"})", "can match nothing"},
  };
  for (const auto& [schema, message] : cases) {
    const absl::StatusOr<Grammar> grammar =
        CompileJsonSchema(json::parse(schema), JsonWhitespace::kCompact);
    ASSERT_FALSE(grammar.ok()) << schema;
    EXPECT_THAT(grammar.status().message(), HasSubstr(message)) << schema;
  }
}

}  // namespace
}  // namespace kvd::structured
