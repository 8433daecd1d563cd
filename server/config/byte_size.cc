#include "server/config/byte_size.h"

#include <limits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace kvd::server {
namespace {

struct Unit {
  std::string_view suffix;
  uint64_t bytes;
};

constexpr Unit kUnits[] = {
    {"", 1},
    {"B", 1},
    {"KiB", uint64_t{1} << 10},
    {"MiB", uint64_t{1} << 20},
    {"GiB", uint64_t{1} << 30},
    {"TiB", uint64_t{1} << 40},
    {"KB", 1000},
    {"MB", 1000 * 1000},
    {"GB", 1000 * 1000 * 1000},
    {"TB", uint64_t{1000} * 1000 * 1000 * 1000},
};

}  // namespace

absl::StatusOr<uint64_t> ParseByteSize(std::string_view text) {
  const auto invalid = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a byte size such as 1073741824, \"512MiB\" or \"1GB\" (units B, KiB, MiB, GiB, "
        "TiB, KB, MB, GB, TB), got \"",
        std::string(text), "\""));
  };
  std::string_view rest = text;
  while (!rest.empty() && absl::ascii_isspace(static_cast<unsigned char>(rest.front()))) {
    rest.remove_prefix(1);
  }
  while (!rest.empty() && absl::ascii_isspace(static_cast<unsigned char>(rest.back()))) {
    rest.remove_suffix(1);
  }
  size_t digits = 0;
  while (digits < rest.size() && absl::ascii_isdigit(static_cast<unsigned char>(rest[digits]))) {
    ++digits;
  }
  if (digits == 0) return invalid();
  uint64_t number = 0;
  for (size_t i = 0; i < digits; ++i) {
    const uint64_t digit = static_cast<uint64_t>(rest[i] - '0');
    if (number > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
      return absl::InvalidArgumentError(
          absl::StrCat("byte size \"", std::string(text), "\" is too large"));
    }
    number = number * 10 + digit;
  }
  std::string_view suffix = rest.substr(digits);
  while (!suffix.empty() && suffix.front() == ' ') suffix.remove_prefix(1);
  for (const Unit& unit : kUnits) {
    if (suffix != unit.suffix) continue;
    if (number > std::numeric_limits<uint64_t>::max() / unit.bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("byte size \"", std::string(text), "\" is too large"));
    }
    return number * unit.bytes;
  }
  return invalid();
}

}  // namespace kvd::server
