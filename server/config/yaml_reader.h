// Typed reading of a parsed YAML document into config structs: each value is checked for its
// type, its key path and line are remembered, and the first error names the file, line and path
// ("config.yaml:12: scheduler.max_num_seqs: must be an integer, got \"many\"").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "yaml-cpp/yaml.h"

namespace kvd::server {

// One document being read: its name, the line of every key path seen, the first error.
class YamlDocument {
 public:
  explicit YamlDocument(std::string source_name) : source_name_(std::move(source_name)) {}

  // Records an error about `path` at `mark`'s line, unless an earlier one was recorded.
  void Fail(const YAML::Mark& mark, std::string_view path, std::string_view message);
  // As Fail, at the line recorded for `path` or for its nearest recorded ancestor.
  void FailAtPath(std::string_view path, std::string_view message);
  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }

  // Remembers where `path` ("tenants[0].id") is written; the first line recorded wins.
  void RecordLine(std::string_view path, const YAML::Mark& mark);
  // The 1-based line of `path` or of its nearest recorded ancestor; nullopt when none is known.
  std::optional<int> LineOf(std::string_view path) const;

  // The elements of a list at `path`, each recorded as "path[i]". Null reads as an empty list;
  // anything else but a list is an error (and gives no elements).
  std::vector<YAML::Node> Elements(const YAML::Node& node, std::string_view path);

 private:
  void FailAtLine(std::optional<int> line, std::string_view path, std::string_view message);

  std::string source_name_;
  absl::flat_hash_map<std::string, int> lines_;
  absl::Status status_;
};

// The keys of one mapping. Every Read*/Find names a key this mapping may have; Finish() then
// reports keys that none named. Reads after an error do nothing; errors go to the document.
class YamlMapReader {
 public:
  // `node` should be a mapping; null reads as an empty one (a section with all keys commented
  // out). `path` is the mapping's key path, "" at the top level.
  YamlMapReader(YamlDocument& document, const YAML::Node& node, std::string path);

  // Each returns whether the key was present and read; an absent key leaves *out as it is.
  bool Read(std::string_view key, std::string* out);
  // A string that is set only when the key is present.
  bool Read(std::string_view key, std::optional<std::string>* out);
  bool Read(std::string_view key, bool* out);
  bool Read(std::string_view key, int32_t* out);
  bool Read(std::string_view key, int64_t* out);
  bool Read(std::string_view key, double* out);
  // A number kept as written: an int64_t when it has no point or exponent ("256"), else a
  // finite double ("0.5", "1.0").
  bool Read(std::string_view key, std::variant<int64_t, double>* out);
  // A list of strings; a single string reads as a list of one.
  bool Read(std::string_view key, std::vector<std::string>* out);
  // A byte count: an integer or a string with a unit (see byte_size.h).
  bool ReadByteSize(std::string_view key, size_t* out);

  // A nested section or list, for the caller to read; nullopt when absent.
  std::optional<YAML::Node> Find(std::string_view key);
  // An error unless `key` is present.
  void Require(std::string_view key);
  // An error about `key`'s value, at its line.
  void Fail(std::string_view key, std::string_view message);
  // The key path of `key` in this mapping ("server.port").
  std::string PathOf(std::string_view key) const;
  // Reports the first key no Read or Find named, with the keys that are allowed.
  void Finish();

 private:
  struct Entry {
    std::string key;
    YAML::Mark mark;
    YAML::Node value;
  };

  // Names `key` as allowed and returns its entry when present (and no error came before).
  const Entry* Lookup(std::string_view key);
  template <typename Int>
  bool ReadInteger(std::string_view key, Int* out);

  YamlDocument& document_;
  std::string path_;
  std::vector<Entry> entries_;
  std::vector<std::string> allowed_;
};

}  // namespace kvd::server
