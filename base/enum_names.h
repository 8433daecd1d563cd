// One table per enum of the names it has in config, JSON and metrics: the value-to-name and
// name-to-value directions and the "one of a, b, c" message all come from the same list.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/check.h"

namespace kvd::base {

template <typename Enum>
struct EnumName {
  Enum value;
  std::string_view name;
};

template <typename Enum, size_t N>
class EnumNames {
 public:
  constexpr explicit EnumNames(const std::array<EnumName<Enum>, N>& entries) : entries_(entries) {}

  // Every value of the enum is in the table: a missing one is a bug, and stops the process.
  constexpr std::string_view Name(Enum value) const {
    for (const EnumName<Enum>& entry : entries_) {
      if (entry.value == value) return entry.name;
    }
    ::kvd::CheckFailed("the value is in its enum's name table", __FILE__, __LINE__);
  }

  constexpr std::optional<Enum> Find(std::string_view name) const {
    for (const EnumName<Enum>& entry : entries_) {
      if (entry.name == name) return entry.value;
    }
    return std::nullopt;
  }

  // InvalidArgument "<field> must be one of a, b, c; got "x"" for a name not in the table.
  absl::StatusOr<Enum> Parse(std::string_view name, std::string_view field) const {
    if (std::optional<Enum> value = Find(name)) return *value;
    return absl::InvalidArgumentError(std::string(field) + " must be one of " + Joined() +
                                      "; got \"" + std::string(name) + "\"");
  }

  // "a, b, c", in the table's order.
  std::string Joined() const {
    std::string joined;
    for (const EnumName<Enum>& entry : entries_) {
      if (!joined.empty()) joined += ", ";
      joined += entry.name;
    }
    return joined;
  }

  constexpr const std::array<EnumName<Enum>, N>& entries() const { return entries_; }

 private:
  std::array<EnumName<Enum>, N> entries_;
};

// `MakeEnumNames<Color>({{Color::kRed, "red"}, {Color::kBlue, "blue"}})`.
template <typename Enum, size_t N>
constexpr EnumNames<Enum, N> MakeEnumNames(const EnumName<Enum> (&entries)[N]) {
  std::array<EnumName<Enum>, N> table{};
  for (size_t i = 0; i < N; ++i) table[i] = entries[i];
  return EnumNames<Enum, N>(table);
}

}  // namespace kvd::base
