// JSON Schema as grammar rules: the texts a rule accepts are JSON instances valid under the
// schema, spaced as JsonWhitespace says, properties in the schema's order.
//
// Supported (the rest is InvalidArgument naming the keyword and where it is):
//   type (one or a list), enum, const, anyOf, oneOf (branches of distinct types), allOf of one
//   schema, $ref to "#" or any JSON pointer within the schema ($defs, definitions...);
//   objects: properties, required, additionalProperties (false, true or absent: no other
//   properties are written; a schema: a map, when there are no properties);
//   arrays: items, prefixItems, minItems, maxItems;
//   strings: minLength, maxLength, pattern, format (date, time, date-time, uuid, email, ipv4);
//   booleans, null; numbers; integers with minimum, maximum, exclusiveMinimum, exclusiveMaximum
//   (numbers with bounds, and multipleOf, are refused).
// Annotations (title, description, default, examples, $schema, $id, $comment, deprecated,
// readOnly, writeOnly) are ignored.
#pragma once

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "structured/grammar.h"
#include "structured/json_rules.h"

namespace kvd::structured {

class JsonSchemaRules {
 public:
  // `root` is the document $ref pointers resolve in; it must outlive this object.
  JsonSchemaRules(JsonRules& json, const JsonValue& root) : json_(json), root_(root) {}

  // A rule for the instances of `schema` found at JSON pointer `path` of the document.
  [[nodiscard]] absl::StatusOr<int32_t> AddSchema(const JsonValue& schema, const std::string& path);

 private:
  absl::StatusOr<int32_t> AddObjectSchema(const JsonValue& schema, const std::string& path);
  absl::StatusOr<int32_t> AddArraySchema(const JsonValue& schema, const std::string& path);
  absl::StatusOr<int32_t> AddNumberSchema(const JsonValue& schema, const std::string& path,
                                          bool integer);
  absl::StatusOr<int32_t> AddStringSchema(const JsonValue& schema, const std::string& path);
  absl::StatusOr<int32_t> AddReference(const std::string& pointer, const std::string& path);
  absl::StatusOr<int32_t> AddAlternatives(const JsonValue& branches, bool exclusive,
                                          const std::string& path);

  JsonRules& json_;
  const JsonValue& root_;
  absl::flat_hash_map<std::string, int32_t> references_;  // JSON pointer → rule
  int depth_ = 0;
};

// The grammar of `schema`'s instances: InvalidArgument for what it does not support.
[[nodiscard]] absl::StatusOr<Grammar> CompileJsonSchema(const JsonValue& schema,
                                                        JsonWhitespace whitespace);
// The grammar of any JSON object (OpenAI's `json_object` response format).
[[nodiscard]] absl::StatusOr<Grammar> CompileAnyJsonObject(JsonWhitespace whitespace);

}  // namespace kvd::structured
