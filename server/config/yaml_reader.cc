#include "server/config/yaml_reader.h"

#include <cmath>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/config/byte_size.h"

namespace kvd::server {
namespace {

// How a value looks, for "got ..." in errors.
std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar: {
      constexpr size_t kMaxShown = 40;
      const std::string& text = node.Scalar();
      if (text.size() <= kMaxShown) return absl::StrCat("\"", text, "\"");
      return absl::StrCat("\"", text.substr(0, kMaxShown), "...\"");
    }
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

// A scalar written without quotes (or with an explicit tag): numbers and booleans must be.
bool IsUnquotedScalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() != "!"; }

}  // namespace

void YamlDocument::Fail(const YAML::Mark& mark, std::string_view path, std::string_view message) {
  std::optional<int> line;
  if (mark.line >= 0) line = mark.line + 1;
  FailAtLine(line, path, message);
}

void YamlDocument::FailAtPath(std::string_view path, std::string_view message) {
  FailAtLine(LineOf(path), path, message);
}

void YamlDocument::FailAtLine(std::optional<int> line, std::string_view path,
                              std::string_view message) {
  if (!status_.ok()) return;
  std::string text = source_name_;
  if (line.has_value()) absl::StrAppend(&text, ":", *line);
  text += ": ";
  if (!path.empty()) absl::StrAppend(&text, std::string(path), ": ");
  text += message;
  status_ = absl::InvalidArgumentError(text);
}

void YamlDocument::RecordLine(std::string_view path, const YAML::Mark& mark) {
  if (mark.line >= 0) lines_.emplace(std::string(path), mark.line + 1);
}

std::optional<int> YamlDocument::LineOf(std::string_view path) const {
  while (!path.empty()) {
    if (auto it = lines_.find(std::string(path)); it != lines_.end()) return it->second;
    // The parent of "a.b[2]" is "a.b", of "a.b" is "a".
    const size_t cut = path.find_last_of(".[");
    if (cut == std::string_view::npos) break;
    path = path.substr(0, cut);
  }
  return std::nullopt;
}

std::vector<YAML::Node> YamlDocument::Elements(const YAML::Node& node, std::string_view path) {
  std::vector<YAML::Node> elements;
  if (!ok() || node.IsNull()) return elements;
  if (!node.IsSequence()) {
    FailAtPath(path, absl::StrCat("must be a list, got ", Describe(node)));
    return elements;
  }
  for (const YAML::Node& element : node) {
    // An empty element's mark points past it; errors about it fall back to the list's line.
    if (!element.IsNull()) {
      RecordLine(absl::StrCat(std::string(path), "[", elements.size(), "]"), element.Mark());
    }
    elements.push_back(element);
  }
  return elements;
}

YamlMapReader::YamlMapReader(YamlDocument& document, const YAML::Node& node, std::string path)
    : document_(document), path_(std::move(path)) {
  if (!document_.ok() || node.IsNull()) return;
  if (!node.IsMap()) {
    if (path_.empty()) {
      document_.Fail(node.Mark(), "",
                     absl::StrCat("the top level must be a mapping, got ", Describe(node)));
    } else {
      document_.FailAtPath(path_, absl::StrCat("must be a mapping, got ", Describe(node)));
    }
    return;
  }
  for (const auto& pair : node) {
    const YAML::Node key = pair.first;  // a copy: `pair` is a proxy
    if (!key.IsScalar()) {
      document_.Fail(key.Mark(), path_, absl::StrCat("keys must be strings, got ", Describe(key)));
      return;
    }
    for (const Entry& entry : entries_) {
      if (entry.key == key.Scalar()) {
        document_.Fail(key.Mark(), PathOf(entry.key),
                       absl::StrCat("duplicate key (first on line ", entry.mark.line + 1, ")"));
        return;
      }
    }
    entries_.push_back(Entry{key.Scalar(), key.Mark(), pair.second});
    document_.RecordLine(PathOf(key.Scalar()), key.Mark());
  }
}

std::string YamlMapReader::PathOf(std::string_view key) const {
  if (path_.empty()) return std::string(key);
  return absl::StrCat(path_, ".", std::string(key));
}

const YamlMapReader::Entry* YamlMapReader::Lookup(std::string_view key) {
  allowed_.emplace_back(key);
  if (!document_.ok()) return nullptr;
  for (const Entry& entry : entries_) {
    if (entry.key == key) return &entry;
  }
  return nullptr;
}

bool YamlMapReader::Read(std::string_view key, std::string* out) {
  const Entry* entry = Lookup(key);
  if (entry == nullptr) return false;
  if (!entry->value.IsScalar()) {
    document_.Fail(entry->mark, PathOf(key),
                   absl::StrCat("must be a string, got ", Describe(entry->value),
                                entry->value.IsNull() ? " (write \"\" for an empty string)" : ""));
    return false;
  }
  *out = entry->value.Scalar();
  return true;
}

bool YamlMapReader::Read(std::string_view key, std::optional<std::string>* out) {
  std::string value;
  if (!Read(key, &value)) return false;
  *out = std::move(value);
  return true;
}

bool YamlMapReader::Read(std::string_view key, bool* out) {
  const Entry* entry = Lookup(key);
  if (entry == nullptr) return false;
  if (IsUnquotedScalar(entry->value)) {
    const std::string& text = entry->value.Scalar();
    if (text == "true" || text == "True" || text == "TRUE") {
      *out = true;
      return true;
    }
    if (text == "false" || text == "False" || text == "FALSE") {
      *out = false;
      return true;
    }
  }
  document_.Fail(entry->mark, PathOf(key),
                 absl::StrCat("must be true or false, got ", Describe(entry->value)));
  return false;
}

template <typename Int>
bool YamlMapReader::ReadInteger(std::string_view key, Int* out) {
  const Entry* entry = Lookup(key);
  if (entry == nullptr) return false;
  int64_t value = 0;
  if (!IsUnquotedScalar(entry->value) || !absl::SimpleAtoi(entry->value.Scalar(), &value)) {
    document_.Fail(entry->mark, PathOf(key),
                   absl::StrCat("must be an integer, got ", Describe(entry->value)));
    return false;
  }
  if (value < std::numeric_limits<Int>::min() || value > std::numeric_limits<Int>::max()) {
    document_.Fail(entry->mark, PathOf(key),
                   absl::StrCat("must be in [", std::numeric_limits<Int>::min(), ", ",
                                std::numeric_limits<Int>::max(), "], got ", value));
    return false;
  }
  *out = static_cast<Int>(value);
  return true;
}

bool YamlMapReader::Read(std::string_view key, int32_t* out) { return ReadInteger(key, out); }

bool YamlMapReader::Read(std::string_view key, int64_t* out) { return ReadInteger(key, out); }

bool YamlMapReader::Read(std::string_view key, double* out) {
  const Entry* entry = Lookup(key);
  if (entry == nullptr) return false;
  double value = 0.0;
  if (!IsUnquotedScalar(entry->value) || !absl::SimpleAtod(entry->value.Scalar(), &value) ||
      !std::isfinite(value)) {
    document_.Fail(entry->mark, PathOf(key),
                   absl::StrCat("must be a finite number, got ", Describe(entry->value)));
    return false;
  }
  *out = value;
  return true;
}

bool YamlMapReader::Read(std::string_view key, std::variant<int64_t, double>* out) {
  const Entry* entry = Lookup(key);
  if (entry == nullptr) return false;
  int64_t integer = 0;
  double number = 0.0;
  if (IsUnquotedScalar(entry->value) && absl::SimpleAtoi(entry->value.Scalar(), &integer)) {
    *out = integer;
    return true;
  }
  if (!IsUnquotedScalar(entry->value) || !absl::SimpleAtod(entry->value.Scalar(), &number) ||
      !std::isfinite(number)) {
    document_.Fail(entry->mark, PathOf(key),
                   absl::StrCat("must be a finite number, got ", Describe(entry->value)));
    return false;
  }
  *out = number;
  return true;
}

bool YamlMapReader::Read(std::string_view key, std::vector<std::string>* out) {
  const Entry* entry = Lookup(key);
  if (entry == nullptr) return false;
  const std::string path = PathOf(key);
  if (entry->value.IsScalar()) {
    *out = {entry->value.Scalar()};
    return true;
  }
  if (!entry->value.IsSequence()) {
    document_.Fail(entry->mark, path,
                   absl::StrCat("must be a list of strings, got ", Describe(entry->value)));
    return false;
  }
  std::vector<std::string> values;
  for (const YAML::Node& element : document_.Elements(entry->value, path)) {
    if (!element.IsScalar()) {
      document_.FailAtPath(absl::StrCat(path, "[", values.size(), "]"),
                           absl::StrCat("must be a string, got ", Describe(element)));
      return false;
    }
    values.push_back(element.Scalar());
  }
  *out = std::move(values);
  return true;
}

bool YamlMapReader::ReadByteSize(std::string_view key, size_t* out) {
  const Entry* entry = Lookup(key);
  if (entry == nullptr) return false;
  if (!entry->value.IsScalar()) {
    document_.Fail(entry->mark, PathOf(key),
                   absl::StrCat("must be a byte size such as 1073741824 or \"1GiB\", got ",
                                Describe(entry->value)));
    return false;
  }
  absl::StatusOr<uint64_t> bytes = ParseByteSize(entry->value.Scalar());
  if (bytes.ok() && *bytes > std::numeric_limits<size_t>::max()) {
    bytes = absl::InvalidArgumentError("too large for this machine");
  }
  if (!bytes.ok()) {
    document_.Fail(
        entry->mark, PathOf(key),
        std::string_view(bytes.status().message().data(), bytes.status().message().size()));
    return false;
  }
  *out = static_cast<size_t>(*bytes);
  return true;
}

std::optional<YAML::Node> YamlMapReader::Find(std::string_view key) {
  const Entry* entry = Lookup(key);
  if (entry == nullptr) return std::nullopt;
  return entry->value;
}

void YamlMapReader::Fail(std::string_view key, std::string_view message) {
  document_.FailAtPath(PathOf(key), message);
}

void YamlMapReader::Require(std::string_view key) {
  if (!document_.ok()) return;
  for (const Entry& entry : entries_) {
    if (entry.key == key) return;
  }
  document_.FailAtPath(path_, absl::StrCat("missing required key ", std::string(key)));
}

void YamlMapReader::Finish() {
  if (!document_.ok()) return;
  for (const Entry& entry : entries_) {
    bool allowed = false;
    for (const std::string& name : allowed_) allowed = allowed || name == entry.key;
    if (allowed) continue;
    std::string expected;
    for (const std::string& name : allowed_) {
      absl::StrAppend(&expected, expected.empty() ? "" : ", ", name);
    }
    document_.Fail(entry.mark, PathOf(entry.key),
                   absl::StrCat("unknown key (expected one of ", expected, ")"));
    return;
  }
}

}  // namespace kvd::server
