// JSON text to a value with a nesting limit applied while parsing: nothing deeper than the limit
// is ever built, so no later recursive copy, dump or render of the value can exhaust the stack.
// Objects are built in linear time whatever their keys: nlohmann's own parser looks each key up
// in the object so far, which for an insertion-ordered object (nlohmann::ordered_json) is a
// linear scan, so one object of many keys took time quadratic in them (a 1 MB body of 100,000
// keys held a thread for 11 s). Every parse of bytes from a client, a file or a peer goes
// through here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kvd::text {

// Deepest nesting of arrays and objects accepted from outside: far beyond any real request,
// config or tokenizer file, and far below what a recursive walk of the value can survive.
inline constexpr int kMaxJsonDepth = 128;

namespace internal {

// nlohmann's SAX interface, building the value. A repeated key keeps its first place and its
// last value, as nlohmann's parser does.
template <typename Json>
class BoundedJsonBuilder {
 public:
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;

  explicit BoundedJsonBuilder(int max_depth) : max_depth_(max_depth) {}

  bool null() { return Put(Json(nullptr)); }
  bool boolean(bool value) { return Put(Json(value)); }
  bool number_integer(number_integer_t value) { return Put(Json(value)); }
  bool number_unsigned(number_unsigned_t value) { return Put(Json(value)); }
  bool number_float(number_float_t value, const string_t&) { return Put(Json(value)); }
  bool string(string_t& value) { return Put(Json(std::move(value))); }
  bool binary(binary_t& value) { return Put(Json::binary(std::move(value))); }

  bool start_object(std::size_t) { return Open(Json::object()); }
  bool key(string_t& key) {
    OpenValue& object = open_.back();
    Object& members = *object.value->template get_ptr<Object*>();
    if constexpr (kOrdered) {
      // Found through the index and appended at the end, never looked up by scanning.
      auto& in_order = static_cast<typename Object::Container&>(members);
      const auto [at, inserted] = object.index.try_emplace(key, in_order.size());
      if (inserted) {
        in_order.emplace_back(std::move(key), Json());
        member_ = &in_order.back().second;
      } else {
        member_ = &in_order[at->second].second;
      }
    } else {
      member_ = &members[std::move(key)];
    }
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(std::size_t) { return Open(Json::array()); }
  bool end_array() { return Close(); }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) {
    syntax_error_ = error.what();
    return false;
  }

  Json& root() { return root_; }
  bool too_deep() const { return too_deep_; }
  const std::string& syntax_error() const { return syntax_error_; }

 private:
  using Object = typename Json::object_t;
  // nlohmann::ordered_map: a vector of members in insertion order.
  static constexpr bool kOrdered = requires { typename Object::Container; };

  // An array or object being filled; an object's members by key, for the ordered kind.
  struct OpenValue {
    Json* value;
    absl::flat_hash_map<string_t, std::size_t> index;
  };

  // Places `value` where the next value goes: the root, the open array's end, or the member
  // whose key came last. Returns where it went.
  Json* Place(Json value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json& parent = *open_.back().value;
    if (parent.is_array()) {
      auto& elements = *parent.template get_ptr<typename Json::array_t*>();
      elements.push_back(std::move(value));
      return &elements.back();
    }
    *member_ = std::move(value);
    return member_;
  }
  bool Put(Json value) {
    Place(std::move(value));
    return true;
  }
  // A container's elements are only appended to while it is the innermost open one, so the
  // pointers on the stack stay valid.
  bool Open(Json container) {
    if (std::ssize(open_) >= max_depth_) {
      too_deep_ = true;
      return false;
    }
    open_.push_back({Place(std::move(container)), {}});
    return true;
  }
  bool Close() {
    open_.pop_back();
    return true;
  }

  const int max_depth_;
  Json root_;
  std::vector<OpenValue> open_;
  Json* member_ = nullptr;
  bool too_deep_ = false;
  std::string syntax_error_;
};

}  // namespace internal

// `what` names the text in errors ("the request body", "config.json").
template <typename Json = nlohmann::json>
[[nodiscard]] absl::StatusOr<Json> ParseBoundedJson(std::string_view text, std::string_view what,
                                                    int max_depth = kMaxJsonDepth) {
  internal::BoundedJsonBuilder<Json> builder(max_depth);
  // The parser is iterative and stops at the first value that opens too deep, so only the
  // shallow part is ever built.
  const bool parsed = Json::sax_parse(text, &builder);
  if (builder.too_deep()) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(what), " nests arrays and objects deeper than ", max_depth, " levels"));
  }
  if (!parsed) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), " is not valid JSON: ", builder.syntax_error()));
  }
  return std::move(builder.root());
}

}  // namespace kvd::text
