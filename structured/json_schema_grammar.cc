#include "structured/json_schema_grammar.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "structured/integer_range.h"
#include "structured/regex_grammar.h"

namespace kvd::structured {
namespace {

using json = nlohmann::ordered_json;

// Deepest nesting of schemas inside schemas (the request's JSON is bounded deeper).
constexpr int kMaxSchemaDepth = 64;
// Largest count a length or item bound may ask the grammar to spell out.
constexpr int64_t kMaxCountedBound = 1000;

// Keywords that only describe: ignored wherever they appear.
constexpr std::array<std::string_view, 11> kAnnotations = {
    "title",      "description", "default",  "examples",  "$schema", "$id",
    "$comment",   "deprecated",  "readOnly", "writeOnly", "$anchor"};
// Keywords holding schemas for $ref to point into; not constraints themselves.
constexpr std::array<std::string_view, 2> kDefinitionHolders = {"$defs", "definitions"};

// The exact string formats, as ajv-formats' "full" mode decides them (leap seconds aside: a
// time is never written as second 60).
struct FormatPattern {
  std::string_view name;
  std::string_view pattern;
};
constexpr std::string_view kDate =
    "(\\d\\d\\d\\d-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]"
    "\\d|30)|02-(?:0[1-9]|1\\d|2[0-8]))|(?:\\d\\d(?:[02468][48]|[13579][26]|[2468]0)|(?:[02468]"
    "[048]|[13579][26])00)-02-29)";
constexpr std::string_view kTime =
    "(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d+)?(?:z|[+-](?:[01]\\d|2[0-3])(?::?[0-5]\\d)?)";
const std::array<FormatPattern, 6> kFormats = {{
    {"date", kDate},
    {"time", kTime},
    {"date-time", ""},  // date, separator, time: assembled below
    {"uuid", "(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}"},
    {"email",
     "[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]"
     "{0,61}[a-z0-9])?\\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"},
    {"ipv4", "(?:(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)"},
}};

absl::Status Unsupported(std::string_view keyword, const std::string& path,
                         std::string_view why = "is not supported") {
  return absl::InvalidArgumentError(absl::StrCat("JSON Schema keyword '", std::string(keyword),
                                                 "' at '", path.empty() ? "#" : path, "' ",
                                                 std::string(why)));
}

std::string Child(const std::string& path, std::string_view key) {
  std::string escaped;
  for (char c : key) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return absl::StrCat(path.empty() ? "#" : path, "/", escaped);
}

// A non-negative count keyword, bounded.
absl::StatusOr<int> CountKeyword(const json& schema, std::string_view keyword,
                                 const std::string& path, int fallback) {
  const auto it = schema.find(keyword);
  if (it == schema.end()) return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < 0) {
    return Unsupported(keyword, path, "must be a non-negative integer");
  }
  if (it->get<int64_t>() > kMaxCountedBound) {
    return Unsupported(keyword, path, absl::StrCat("is over ", kMaxCountedBound));
  }
  return static_cast<int>(it->get<int64_t>());
}

// The JSON types an instance of `value` has ("integer" for integral numbers).
std::string_view TypeOfValue(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::string: return "string";
    case json::value_t::array: return "array";
    case json::value_t::object: return "object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    default: return "number";
  }
}

// The instance types a schema may accept, for oneOf's disjointness; "any" when unknown.
absl::flat_hash_set<std::string> PossibleTypes(const json& schema) {
  absl::flat_hash_set<std::string> types;
  if (!schema.is_object()) return {"any"};
  if (const auto it = schema.find("const"); it != schema.end()) {
    types.insert(std::string(TypeOfValue(*it)));
    return types;
  }
  if (const auto it = schema.find("enum"); it != schema.end() && it->is_array()) {
    for (const json& value : *it) types.insert(std::string(TypeOfValue(value)));
    return types;
  }
  const auto it = schema.find("type");
  if (it == schema.end()) return {"any"};
  if (it->is_string()) types.insert(it->get<std::string>());
  if (it->is_array()) {
    for (const json& type : *it) {
      if (type.is_string()) types.insert(type.get<std::string>());
    }
  }
  // An integer is a number too.
  if (types.contains("number")) types.insert("integer");
  return types;
}

}  // namespace

absl::StatusOr<int32_t> JsonSchemaRules::AddSchema(const json& schema, const std::string& path) {
  if (depth_ >= kMaxSchemaDepth) return Unsupported("(nesting)", path, "is too deep");
  if (json_.builder().symbol_count() > GrammarBuilder::kMaxSymbols) {
    return Unsupported("(size)", path, "makes the constraint's grammar too large");
  }
  ++depth_;
  struct Leave {
    int& depth;
    ~Leave() { --depth; }
  } leave{depth_};
  GrammarBuilder& builder = json_.builder();

  if (schema.is_boolean()) {
    if (schema.get<bool>()) return json_.Value();
    return Unsupported("false", path, "admits no value");
  }
  if (!schema.is_object()) return Unsupported("(schema)", path, "must be an object or boolean");

  for (const auto& [keyword, value] : schema.items()) {
    static const absl::flat_hash_set<std::string_view> kKnown = {
        "type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "properties", "required",
        "additionalProperties", "items", "prefixItems", "minItems", "maxItems", "minLength",
        "maxLength", "pattern", "format", "uniqueItems", "minimum", "maximum", "exclusiveMinimum",
        "exclusiveMaximum"};
    if (std::find(kAnnotations.begin(), kAnnotations.end(), keyword) != kAnnotations.end() ||
        std::find(kDefinitionHolders.begin(), kDefinitionHolders.end(), keyword) !=
            kDefinitionHolders.end() ||
        kKnown.contains(keyword)) {
      continue;
    }
    return Unsupported(keyword, path);
  }

  if (const auto it = schema.find("$ref"); it != schema.end()) {
    if (!it->is_string()) return Unsupported("$ref", path, "must be a string");
    for (const auto& [keyword, value] : schema.items()) {
      if (keyword != "$ref" &&
          std::find(kAnnotations.begin(), kAnnotations.end(), keyword) == kAnnotations.end() &&
          std::find(kDefinitionHolders.begin(), kDefinitionHolders.end(), keyword) ==
              kDefinitionHolders.end()) {
        return Unsupported(keyword, path, "beside '$ref' is not supported");
      }
    }
    return AddReference(it->get<std::string>(), path);
  }
  if (const auto it = schema.find("allOf"); it != schema.end()) {
    if (!it->is_array() || it->size() != 1 || schema.size() > 1 + schema.count("$defs")) {
      return Unsupported("allOf", path, "is supported only as the one keyword, of one schema");
    }
    return AddSchema((*it)[0], Child(Child(path, "allOf"), "0"));
  }

  // The types this schema admits, before enum and const narrow them.
  absl::flat_hash_set<std::string> types;
  if (const auto it = schema.find("type"); it != schema.end()) {
    const std::vector<json> listed = it->is_array() ? it->get<std::vector<json>>()
                                                    : std::vector<json>{*it};
    for (const json& type : listed) {
      static const absl::flat_hash_set<std::string_view> kTypes = {
          "null", "boolean", "object", "array", "number", "integer", "string"};
      if (!type.is_string() || !kTypes.contains(type.get<std::string>())) {
        return Unsupported("type", path, "names an unknown type");
      }
      types.insert(type.get<std::string>());
    }
    if (types.empty()) return Unsupported("type", path, "admits no value");
  }
  const auto admits = [&types](std::string_view type) {
    return types.empty() || types.contains(std::string(type)) ||
           (type == "integer" && types.contains("number"));
  };

  // Keywords that constrain, beside `allowed` ones: refused, never dropped.
  const auto refuse_siblings = [&](std::string_view owner,
                                   std::initializer_list<std::string_view> allowed) -> absl::Status {
    for (const auto& [keyword, value] : schema.items()) {
      const bool annotation =
          std::find(kAnnotations.begin(), kAnnotations.end(), keyword) != kAnnotations.end() ||
          std::find(kDefinitionHolders.begin(), kDefinitionHolders.end(), keyword) !=
              kDefinitionHolders.end();
      if (annotation || std::find(allowed.begin(), allowed.end(), keyword) != allowed.end()) {
        continue;
      }
      return Unsupported(keyword, path, absl::StrCat("beside '", std::string(owner),
                                                     "' is not supported"));
    }
    return absl::OkStatus();
  };

  if (schema.contains("const") || schema.contains("enum")) {
    KVD_RETURN_IF_ERROR(refuse_siblings(schema.contains("enum") ? "enum" : "const",
                                        {"type", "enum", "const"}));
    std::vector<json> values;
    if (const auto it = schema.find("const"); it != schema.end()) values.push_back(*it);
    if (const auto it = schema.find("enum"); it != schema.end()) {
      if (!it->is_array() || it->empty()) {
        return Unsupported("enum", path, "must be a non-empty list");
      }
      if (schema.contains("const")) {
        if (std::find(it->begin(), it->end(), values[0]) == it->end()) values.clear();
      } else {
        values = it->get<std::vector<json>>();
      }
    }
    const int32_t rule = builder.AddRule("enum");
    for (const json& value : values) {
      if (!admits(TypeOfValue(value))) continue;
      const Symbol symbol = Symbol::Rule(json_.Literal(value));
      builder.AddAlternative(rule, {&symbol, 1});
    }
    return rule;  // an empty enum leaves the rule without alternatives: Build names it
  }

  for (const char* combinator : {"anyOf", "oneOf"}) {
    if (const auto it = schema.find(combinator); it != schema.end()) {
      KVD_RETURN_IF_ERROR(refuse_siblings(combinator, {combinator}));
      return AddAlternatives(*it, std::string_view(combinator) == "oneOf",
                             Child(path, combinator));
    }
  }

  // No type: what the constraint keywords imply, else any value.
  if (types.empty()) {
    if (schema.contains("properties") || schema.contains("required") ||
        schema.contains("additionalProperties")) {
      types.insert("object");
    }
    if (schema.contains("items") || schema.contains("prefixItems") ||
        schema.contains("minItems") || schema.contains("maxItems") ||
        schema.contains("uniqueItems")) {
      types.insert("array");
    }
    if (schema.contains("minimum") || schema.contains("maximum") ||
        schema.contains("exclusiveMinimum") || schema.contains("exclusiveMaximum")) {
      types.insert("number");
    }
    if (schema.contains("minLength") || schema.contains("maxLength") ||
        schema.contains("pattern") || schema.contains("format")) {
      types.insert("string");
    }
    if (types.empty()) return json_.Value();
  }
  const int32_t rule = builder.AddRule("schema");
  for (std::string_view type : {"object", "array", "string", "number", "integer", "boolean",
                                "null"}) {
    if (!types.contains(std::string(type))) continue;
    if (type == "integer" && types.contains("number")) continue;
    int32_t alternative = -1;
    if (type == "object") {
      KVD_ASSIGN_OR_RETURN(alternative, AddObjectSchema(schema, path));
    } else if (type == "array") {
      KVD_ASSIGN_OR_RETURN(alternative, AddArraySchema(schema, path));
    } else if (type == "string") {
      KVD_ASSIGN_OR_RETURN(alternative, AddStringSchema(schema, path));
    } else if (type == "number" || type == "integer") {
      KVD_ASSIGN_OR_RETURN(alternative, AddNumberSchema(schema, path, type == "integer"));
    } else if (type == "boolean") {
      alternative = json_.Boolean();
    } else {
      alternative = json_.Null();
    }
    const Symbol symbol = Symbol::Rule(alternative);
    builder.AddAlternative(rule, {&symbol, 1});
  }
  return rule;
}

absl::StatusOr<int32_t> JsonSchemaRules::AddNumberSchema(const json& schema,
                                                         const std::string& path, bool integer) {
  static constexpr std::string_view kBounds[] = {"minimum", "maximum", "exclusiveMinimum",
                                                 "exclusiveMaximum"};
  bool bounded = false;
  for (std::string_view bound : kBounds) {
    const auto it = schema.find(std::string(bound));
    if (it == schema.end()) continue;
    if (!it->is_number()) return Unsupported(bound, path, "must be a number");
    if (!integer) return Unsupported(bound, path, "is supported only on integers");
    bounded = true;
  }
  // ajv-formats checks its number formats (int32, float...) on numbers; kvd has none.
  if (const auto it = schema.find("format"); it != schema.end()) {
    const bool string_format =
        it->is_string() && std::any_of(kFormats.begin(), kFormats.end(), [&](const auto& f) {
          return f.name == it->template get<std::string>();
        });
    if (!string_format) return Unsupported("format", path, "on a number is not supported");
  }
  if (!bounded) return integer ? json_.Integer() : json_.Number();
  // The integers inside every bound, within the 16 digits an integer is written with.
  const double limit = static_cast<double>(kMaxIntegerMagnitude);
  double low = -limit;
  double high = limit;
  if (schema.contains("minimum")) low = std::max(low, std::ceil(schema["minimum"].get<double>()));
  if (schema.contains("exclusiveMinimum")) {
    low = std::max(low, std::floor(schema["exclusiveMinimum"].get<double>()) + 1);
  }
  if (schema.contains("maximum")) high = std::min(high, std::floor(schema["maximum"].get<double>()));
  if (schema.contains("exclusiveMaximum")) {
    high = std::min(high, std::ceil(schema["exclusiveMaximum"].get<double>()) - 1);
  }
  if (!(low <= high)) return Unsupported("minimum", path, "and maximum admit no integer");
  // Clamped as integers: kMaxIntegerMagnitude is not exact as a double.
  const auto to_integer = [](double bound) {
    if (bound >= static_cast<double>(kMaxIntegerMagnitude)) return kMaxIntegerMagnitude;
    if (bound <= -static_cast<double>(kMaxIntegerMagnitude)) return -kMaxIntegerMagnitude;
    return static_cast<int64_t>(bound);
  };
  return AddIntegerRangeRule(json_.builder(), to_integer(low), to_integer(high));
}

absl::StatusOr<int32_t> JsonSchemaRules::AddAlternatives(const json& branches, bool exclusive,
                                                         const std::string& path) {
  if (!branches.is_array() || branches.empty()) {
    return Unsupported(exclusive ? "oneOf" : "anyOf", path, "must be a non-empty list");
  }
  if (exclusive) {
    // oneOf is written as anyOf when no instance can match two branches: their types differ.
    absl::flat_hash_set<std::string> seen;
    for (const json& branch : branches) {
      for (const std::string& type : PossibleTypes(branch)) {
        // An integer is a number, and 2.0 is an integer: the two are one class here.
        if (type == "any" || !seen.insert(type == "integer" ? "number" : type).second) {
          return Unsupported("oneOf", path,
                             "is supported only with branches of distinct types (use anyOf)");
        }
      }
    }
  }
  const int32_t rule = json_.builder().AddRule(exclusive ? "one_of" : "any_of");
  for (size_t i = 0; i < branches.size(); ++i) {
    KVD_ASSIGN_OR_RETURN(const int32_t branch,
                         AddSchema(branches[i], Child(path, std::to_string(i))));
    const Symbol symbol = Symbol::Rule(branch);
    json_.builder().AddAlternative(rule, {&symbol, 1});
  }
  return rule;
}

absl::StatusOr<int32_t> JsonSchemaRules::AddReference(const std::string& pointer,
                                                      const std::string& path) {
  if (pointer.empty() || pointer[0] != '#') {
    return Unsupported("$ref", path, "must point within the schema ('#...')");
  }
  if (const auto it = references_.find(pointer); it != references_.end()) return it->second;
  const json* target = &root_;
  if (pointer.size() > 1) {
    try {
      target = &root_.at(json::json_pointer(pointer.substr(1)));
    } catch (const json::exception&) {
      return Unsupported("$ref", path, absl::StrCat("points at nothing: '", pointer, "'"));
    }
  }
  // The rule exists before its body, so a recursive schema refers back to it.
  GrammarBuilder& builder = json_.builder();
  const int32_t rule = builder.AddRule(absl::StrCat("ref ", pointer));
  references_.emplace(pointer, rule);
  KVD_ASSIGN_OR_RETURN(const int32_t body, AddSchema(*target, pointer));
  const Symbol symbol = Symbol::Rule(body);
  builder.AddAlternative(rule, {&symbol, 1});
  return rule;
}

absl::StatusOr<int32_t> JsonSchemaRules::AddObjectSchema(const json& schema,
                                                         const std::string& path) {
  GrammarBuilder& builder = json_.builder();
  const json no_properties = json::object();
  const auto properties_it = schema.find("properties");
  const json& properties = properties_it == schema.end() ? no_properties : *properties_it;
  if (!properties.is_object()) return Unsupported("properties", path, "must be an object");
  absl::flat_hash_set<std::string> required;
  if (const auto it = schema.find("required"); it != schema.end()) {
    if (!it->is_array()) return Unsupported("required", path, "must be a list of names");
    for (const json& name : *it) {
      if (!name.is_string()) return Unsupported("required", path, "must be a list of names");
      if (!properties.contains(name.get<std::string>())) {
        return Unsupported("required", path,
                           absl::StrCat("names '", name.get<std::string>(),
                                        "', which 'properties' does not define"));
      }
      required.insert(name.get<std::string>());
    }
  }
  const Symbol open = builder.Bytes(ByteSet::Of('{'));
  const Symbol close = builder.Bytes(ByteSet::Of('}'));

  const auto additional = schema.find("additionalProperties");
  if (additional != schema.end() && additional->is_object() && properties.empty()) {
    // A map: any keys, each value under the additionalProperties schema.
    KVD_ASSIGN_OR_RETURN(const int32_t value,
                         AddSchema(*additional, Child(path, "additionalProperties")));
    return json_.MapOf(Symbol::Rule(value));
  }
  if (additional != schema.end() && !additional->is_boolean() && !properties.empty()) {
    return Unsupported("additionalProperties", path,
                       "as a schema is supported only without 'properties'");
  }

  // Each property as `"name" ":" value`, in the schema's order.
  std::vector<int32_t> members;
  std::vector<bool> member_required;
  for (const auto& [name, property_schema] : properties.items()) {
    KVD_ASSIGN_OR_RETURN(const int32_t value,
                         AddSchema(property_schema, Child(Child(path, "properties"), name)));
    const int32_t member = builder.AddRule(absl::StrCat("property ", name));
    std::vector<Symbol> sequence = {Symbol::Rule(json_.Literal(json(name)))};
    json_.AppendColon(sequence);
    sequence.push_back(Symbol::Rule(value));
    builder.AddAlternative(member, sequence);
    members.push_back(member);
    member_required.push_back(required.contains(name));
  }
  // after_i: the members from i on, some member already written (each needs a comma);
  // first_i: the same with none written yet.
  const size_t count = members.size();
  std::vector<int32_t> after(count + 1);
  std::vector<int32_t> first(count);
  after[count] = builder.AddRule("members_end");
  builder.AddAlternative(after[count], {});
  for (size_t i = count; i-- > 0;) {
    after[i] = builder.AddRule("members_after");
    std::vector<Symbol> with;
    json_.AppendComma(with);
    with.push_back(Symbol::Rule(members[i]));
    with.push_back(Symbol::Rule(after[i + 1]));
    builder.AddAlternative(after[i], with);
    const Symbol skip = Symbol::Rule(after[i + 1]);
    if (!member_required[i]) builder.AddAlternative(after[i], {&skip, 1});

    // first_i writes at least one member: the empty object is its own alternative, so that
    // no whitespace stands twice between the braces.
    first[i] = builder.AddRule("members_first");
    const Symbol lead[] = {Symbol::Rule(members[i]), Symbol::Rule(after[i + 1])};
    builder.AddAlternative(first[i], lead);
    if (!member_required[i] && i + 1 < count) {
      const Symbol skip_first = Symbol::Rule(first[i + 1]);
      builder.AddAlternative(first[i], {&skip_first, 1});
    }
  }
  const int32_t rule = builder.AddRule("object");
  if (required.empty()) json_.AddBracketed(rule, open, {}, close);
  if (count > 0) {
    const Symbol members_inside = Symbol::Rule(first[0]);
    json_.AddBracketed(rule, open, {&members_inside, 1}, close);
  }
  return rule;
}

absl::StatusOr<int32_t> JsonSchemaRules::AddArraySchema(const json& schema,
                                                        const std::string& path) {
  if (schema.contains("uniqueItems") && schema["uniqueItems"] != false) {
    return Unsupported("uniqueItems", path);
  }
  KVD_ASSIGN_OR_RETURN(const int min_items, CountKeyword(schema, "minItems", path, 0));
  KVD_ASSIGN_OR_RETURN(const int max_items, CountKeyword(schema, "maxItems", path, -1));
  if (max_items >= 0 && max_items < min_items) {
    return Unsupported("maxItems", path, "is below minItems");
  }
  // `items: false` admits no element past the prefix.
  const auto items = schema.find("items");
  const bool no_items = items != schema.end() && *items == false;
  int32_t item = -1;
  if (no_items) {
    if (min_items > 0 && !schema.contains("prefixItems")) {
      return Unsupported("minItems", path, "beside 'items': false admits no array");
    }
    if (!schema.contains("prefixItems")) return json_.ArrayOf(Symbol{}, 0, 0);
  } else if (items != schema.end()) {
    KVD_ASSIGN_OR_RETURN(item, AddSchema(*items, Child(path, "items")));
  } else {
    item = json_.Value();
  }
  if (const auto it = schema.find("prefixItems"); it != schema.end()) {
    if (!it->is_array()) return Unsupported("prefixItems", path, "must be a list");
    if (min_items > 0 || max_items >= 0 || static_cast<int64_t>(it->size()) > kMaxCountedBound) {
      return Unsupported("prefixItems", path, "beside minItems or maxItems is not supported");
    }
    // A tuple: exactly the prefix items, then the rest under `items`.
    std::vector<int32_t> prefix;
    for (size_t i = 0; i < it->size(); ++i) {
      KVD_ASSIGN_OR_RETURN(const int32_t rule,
                           AddSchema((*it)[i], Child(Child(path, "prefixItems"), std::to_string(i))));
      prefix.push_back(rule);
    }
    GrammarBuilder& builder = json_.builder();
    const int32_t rule = builder.AddRule("tuple");
    if (prefix.empty()) return json_.ArrayOf(Symbol::Rule(item), 0, no_items ? 0 : -1);
    std::vector<Symbol> inside;
    for (size_t i = 0; i < prefix.size(); ++i) {
      if (i > 0) json_.AppendComma(inside);
      inside.push_back(Symbol::Rule(prefix[i]));
    }
    if (!no_items) inside.push_back(Symbol::Rule(json_.MoreAfterCommas(Symbol::Rule(item))));
    json_.AddBracketed(rule, builder.Bytes(ByteSet::Of('[')), inside,
                       builder.Bytes(ByteSet::Of(']')));
    return rule;
  }
  return json_.ArrayOf(Symbol::Rule(item), min_items, max_items);
}

absl::StatusOr<int32_t> JsonSchemaRules::AddStringSchema(const json& schema,
                                                         const std::string& path) {
  KVD_ASSIGN_OR_RETURN(const int min_length, CountKeyword(schema, "minLength", path, 0));
  KVD_ASSIGN_OR_RETURN(const int max_length, CountKeyword(schema, "maxLength", path, -1));
  if (max_length >= 0 && max_length < min_length) {
    return Unsupported("maxLength", path, "is below minLength");
  }
  const bool has_pattern = schema.contains("pattern");
  const bool has_format = schema.contains("format");
  if (has_pattern + has_format + (min_length > 0 || max_length >= 0) > 1) {
    return Unsupported(has_pattern ? "pattern" : "format", path,
                       "combined with another string constraint is not supported");
  }
  if (!has_pattern && !has_format) return json_.StringOfLength(min_length, max_length);

  std::string pattern;
  RegexOptions options{.inside_json_string = true};
  if (has_pattern) {
    if (!schema["pattern"].is_string()) return Unsupported("pattern", path, "must be a string");
    pattern = schema["pattern"].get<std::string>();
    options.search = true;
  } else {
    if (!schema["format"].is_string()) return Unsupported("format", path, "must be a string");
    const std::string format = schema["format"].get<std::string>();
    const auto it = std::find_if(kFormats.begin(), kFormats.end(),
                                 [&](const FormatPattern& f) { return f.name == format; });
    if (it == kFormats.end()) {
      return Unsupported("format", path,
                         absl::StrCat("'", format, "' is not supported (supported: date, time, "
                                      "date-time, uuid, email, ipv4)"));
    }
    pattern = format == "date-time" ? absl::StrCat(std::string(kDate), "[t\\s]", std::string(kTime)) : std::string(it->pattern);
    options.ignore_ascii_case = format != "ipv4" && format != "date";
  }
  absl::StatusOr<int32_t> body = AddRegexRule(json_.builder(), pattern, options);
  if (!body.ok()) {
    return Unsupported(has_pattern ? "pattern" : "format", path,
                       std::string(body.status().message()));
  }
  GrammarBuilder& builder = json_.builder();
  const Symbol quote = builder.Bytes(ByteSet::Of('"'));
  const int32_t rule = builder.AddRule("pattern_string");
  const Symbol sequence[] = {quote, Symbol::Rule(*body), quote};
  builder.AddAlternative(rule, sequence);
  return rule;
}

absl::StatusOr<Grammar> CompileJsonSchema(const json& schema, JsonWhitespace whitespace) {
  GrammarBuilder builder;
  JsonRules json_rules(builder, whitespace);
  JsonSchemaRules rules(json_rules, schema);
  KVD_ASSIGN_OR_RETURN(const int32_t root, rules.AddSchema(schema, ""));
  return std::move(builder).Build(root);
}

absl::StatusOr<Grammar> CompileAnyJsonObject(JsonWhitespace whitespace) {
  GrammarBuilder builder;
  JsonRules json_rules(builder, whitespace);
  const int32_t root = json_rules.Object();
  return std::move(builder).Build(root);
}

}  // namespace kvd::structured
