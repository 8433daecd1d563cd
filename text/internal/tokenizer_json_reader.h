// Checked access to a parsed tokenizer.json: every problem becomes a Status naming the file and
// the JSON path, without the exceptions nlohmann's accessors throw.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kvd::text::internal {

using Json = nlohmann::json;

// Field access that checks types first, so nothing here throws.
class JsonReader {
 public:
  explicit JsonReader(std::string_view source_name) : source_name_(source_name) {}

  absl::Status Invalid(const std::string& path, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(source_name_, ": ", path, ": ", what));
  }
  absl::Status Unsupported(const std::string& path, const std::string& what) const {
    return absl::UnimplementedError(absl::StrCat(source_name_, ": ", path, ": ", what));
  }

  // The member `key` of `object`, or null when absent (an explicit null reads the same).
  static const Json* Find(const Json& object, std::string_view key) {
    const auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
  }

  absl::StatusOr<const Json*> Required(const Json& object, std::string_view key, Json::value_t type,
                                       const std::string& path) const {
    const Json* value = Find(object, key);
    if (value == nullptr) return Invalid(path, "missing");
    if (value->type() != type && !(type == Json::value_t::number_integer &&
                                   value->type() == Json::value_t::number_unsigned)) {
      return Invalid(path,
                     absl::StrCat("expected ", TypeName(type), ", found ", value->type_name()));
    }
    return value;
  }

  absl::StatusOr<std::string> String(const Json& object, std::string_view key,
                                     const std::string& path) const {
    absl::StatusOr<const Json*> value = Required(object, key, Json::value_t::string, path);
    if (!value.ok()) return value.status();
    return (*value)->get<std::string>();
  }

  absl::StatusOr<bool> Bool(const Json& object, std::string_view key, bool default_value,
                            const std::string& path) const {
    const Json* value = Find(object, key);
    if (value == nullptr) return default_value;
    if (!value->is_boolean()) {
      return Invalid(path, absl::StrCat("expected a boolean, found ", value->type_name()));
    }
    return value->get<bool>();
  }

  // A token id: an integer in [0, 2^31).
  absl::StatusOr<int32_t> Id(const Json& value, const std::string& path) const {
    if (!value.is_number_integer()) {
      return Invalid(path, absl::StrCat("expected an integer id, found ", value.type_name(),
                                        value.is_primitive() ? " " + value.dump() : ""));
    }
    const int64_t id = value.is_number_unsigned()
                           ? static_cast<int64_t>(std::min<uint64_t>(
                                 value.get<uint64_t>(), std::numeric_limits<int64_t>::max()))
                           : value.get<int64_t>();
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      return Invalid(path, absl::StrCat("id ", value.dump(), " is out of range"));
    }
    return static_cast<int32_t>(id);
  }

  // The "type" member of a component object at `path`.
  absl::StatusOr<std::string> Type(const Json& component, const std::string& path) const {
    if (!component.is_object()) {
      return Invalid(path, absl::StrCat("expected an object, found ", component.type_name()));
    }
    return String(component, "type", absl::StrCat(path, ".type"));
  }

 private:
  static const char* TypeName(Json::value_t type) {
    switch (type) {
      case Json::value_t::object:
        return "an object";
      case Json::value_t::array:
        return "an array";
      case Json::value_t::string:
        return "a string";
      case Json::value_t::boolean:
        return "a boolean";
      case Json::value_t::number_integer:
        return "an integer";
      default:
        return "a number";
    }
  }

  std::string source_name_;  // std::string: Debian's Abseil StrCat takes no std::string_view
};

}  // namespace kvd::text::internal
