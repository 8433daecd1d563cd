// One key of a config section as a table row: its name, the struct member it fills and the rule
// its value keeps. A section's rows are the one place its keys are listed: the YAML loader reads
// by them, Validate checks by them, and the example-file test walks them. A new key is a member,
// a row and a line of deploy/config/example.yaml.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "absl/status/status.h"

namespace kvd::base {

// Where a number may lie: [min, max], each end open where said; an infinite end is no limit.
// `unit` follows the interval in errors ("seconds"); `zero_means` says what a 0 does where 0 is
// the lowest value and special ("unlimited").
struct ValueRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;
  bool max_open = false;
  std::string_view unit;
  std::string_view zero_means;
};

// What a text value may hold; the default allows any.
struct TextRule {
  bool non_empty = false;
  size_t max_bytes = 0;  // 0: no limit
  // No whitespace or control characters (host names, ids, endpoints).
  bool printable = false;
  // When not empty, the value must be one of these.
  std::span<const std::string_view> choices;
};

// A member that holds an enum, reached through its names: `name` gives the current value's,
// `set` takes one and says whether it was a name the member accepts (as `TextRule::choices`).
template <typename Section>
struct EnumMember {
  std::string_view (*name)(const Section&);
  bool (*set)(Section&, std::string_view);
};

template <typename Section>
struct ConfigKey {
  // A size_t member is a byte count (YAML may write "512MiB").
  using Member = std::variant<bool Section::*, int32_t Section::*, int64_t Section::*,
                              double Section::*, size_t Section::*, std::string Section::*,
                              std::optional<std::string> Section::*, EnumMember<Section>>;

  std::string_view name;
  Member member;
  ValueRange range;  // numbers
  TextRule text;     // strings, optional strings and enums (their choices)
};

// InvalidArgument "<path>: <message>" carrying `path` ("tenants[1].weight") as a payload, so that
// a loader can point at the key's line.
absl::Status ConfigKeyError(std::string_view path, std::string_view message);
// The key path a ConfigKeyError is about, if `status` is one.
std::optional<std::string> ConfigErrorKeyPath(const absl::Status& status);

// Errors about one value against its row's rule; OK when it keeps it. A double must also be
// finite.
absl::Status CheckNumber(std::string_view path, const ValueRange& range, double value);
absl::Status CheckNumber(std::string_view path, const ValueRange& range, int64_t value);
absl::Status CheckNumber(std::string_view path, const ValueRange& range, uint64_t value);
absl::Status CheckText(std::string_view path, const TextRule& rule, std::string_view value);

// "<prefix>.<name>", or the name alone at the top level.
std::string ConfigKeyPath(std::string_view prefix, std::string_view name);

// The first key of `keys` whose value in `section` breaks its row's rule, as a ConfigKeyError
// about "<prefix>.<key>"; OK when none does.
template <typename Section>
absl::Status CheckConfigKeys(std::string_view prefix, std::span<const ConfigKey<Section>> keys,
                             const Section& section) {
  for (const ConfigKey<Section>& key : keys) {
    const std::string path = ConfigKeyPath(prefix, key.name);
    absl::Status status = std::visit(
        [&](auto member) -> absl::Status {
          using MemberType = decltype(member);
          if constexpr (std::is_same_v<MemberType, EnumMember<Section>>) {
            return CheckText(path, key.text, member.name(section));
          } else {
            const auto& value = section.*member;
            using Value = std::decay_t<decltype(value)>;
            if constexpr (std::is_same_v<Value, bool>) {
              return absl::OkStatus();
            } else if constexpr (std::is_same_v<Value, std::string>) {
              return CheckText(path, key.text, value);
            } else if constexpr (std::is_same_v<Value, std::optional<std::string>>) {
              return value.has_value() ? CheckText(path, key.text, *value) : absl::OkStatus();
            } else if constexpr (std::is_same_v<Value, int32_t>) {
              return CheckNumber(path, key.range, int64_t{value});
            } else {
              return CheckNumber(path, key.range, value);
            }
          }
        },
        key.member);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// A table as the span CheckConfigKeys and the readers take.
template <typename Section, size_t N>
constexpr std::span<const ConfigKey<Section>> KeysOf(const ConfigKey<Section> (&keys)[N]) {
  return std::span<const ConfigKey<Section>>(keys, N);
}

}  // namespace kvd::base
