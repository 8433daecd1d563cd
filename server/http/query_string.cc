#include "server/http/query_string.h"

#include "absl/strings/str_cat.h"

namespace kvd::server {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

absl::StatusOr<std::string> Decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out.push_back(' ');
    } else if (text[i] == '%') {
      const int high = i + 2 < text.size() ? HexValue(text[i + 1]) : -1;
      const int low = high >= 0 ? HexValue(text[i + 2]) : -1;
      if (low < 0) {
        return absl::InvalidArgumentError("the query string has a malformed percent escape");
      }
      out.push_back(static_cast<char>(high * 16 + low));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ParseQueryString(std::string_view query) {
  std::map<std::string, std::string> params;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query.remove_prefix(amp == std::string_view::npos ? query.size() : amp + 1);
    if (pair.empty()) continue;
    const size_t equals = pair.find('=');
    auto name = Decode(pair.substr(0, equals));
    if (!name.ok()) return name.status();
    auto value = Decode(equals == std::string_view::npos ? "" : pair.substr(equals + 1));
    if (!value.ok()) return value.status();
    if (!params.emplace(*name, *value).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("the query parameter '", *name, "' is given twice"));
    }
  }
  return params;
}

}  // namespace kvd::server
