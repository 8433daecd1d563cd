// The normalizer of a tokenizer.json (NFC and the other Unicode forms, Replace, Prepend,
// Lowercase, Strip, in sequence): rewrites the text between added tokens before it is
// pre-tokenized, as Hugging Face's normalizers do (offsets are not tracked).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kvd::text::internal {

// One normalizer, as read from tokenizer.json.
struct NormalizerStep {
  enum class Kind { kNfc, kNfd, kNfkc, kNfkd, kLowercase, kStrip, kPrepend, kReplace };
  Kind kind = Kind::kNfc;
  std::string pattern;  // kReplace: what to replace, a literal or (when `regex`) a PCRE2 regex
  bool regex = false;
  std::string content;      // kReplace: the replacement; kPrepend: the prefix
  bool strip_left = false;  // kStrip: remove leading / trailing Unicode whitespace
  bool strip_right = false;
  std::string json_path;  // for errors
};

class Normalizer {
 public:
  // Compiles regex patterns and looks up the ICU normalizers once. `source_name` prefixes errors.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Normalizer>> Create(
      std::vector<NormalizerStep> steps, std::string_view source_name);
  ~Normalizer();
  Normalizer(const Normalizer&) = delete;
  Normalizer& operator=(const Normalizer&) = delete;

  bool empty() const { return steps_.empty(); }

  // Returns the normalized `text`, using `*buffer` for storage when the text changes (the view
  // may point into `text` when nothing did). Bytes that are not valid UTF-8 pass through
  // untouched. Thread-safe.
  std::string_view Apply(std::string_view text, std::string* buffer) const;

 private:
  struct Step;
  explicit Normalizer(std::vector<Step> steps);

  std::vector<Step> steps_;
};

}  // namespace kvd::text::internal
