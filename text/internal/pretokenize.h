// The pre-tokenizer of a tokenizer.json: regex splits (PCRE2; Split, Digits, ByteLevel's regex),
// ByteLevel's prefix space and Metaspace, applied in order to the normalized text between added
// tokens. The byte-level mapping itself happens in the BPE model.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

namespace kvd::text::internal {

// GPT-2's pattern, which the ByteLevel pre-tokenizer splits with when use_regex is true.
inline constexpr std::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// What a Split does with the pieces its pattern matches (Hugging Face's SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// One step of the pipeline, as read from tokenizer.json.
struct PreTokenizerStep {
  enum class Kind {
    kSplit,        // split each piece on `pattern`
    kPrefixSpace,  // ByteLevel add_prefix_space: prepend ' ' to a piece not starting with one
    kMetaspace,    // spaces become `pattern` (▁), which is prepended and split on
  };
  // kMetaspace: which pieces get the replacement prepended (when they do not start with it).
  enum class Prepend { kAlways, kFirst, kNever };
  Kind kind = Kind::kSplit;
  std::string pattern;  // a PCRE2 regex, a literal when `literal`; kMetaspace: the replacement
  bool literal = false;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;                 // split on what the pattern does not match
  Prepend prepend = Prepend::kAlways;  // kMetaspace; kFirst: only the piece at the text's start
  bool metaspace_split = true;         // kMetaspace: split before each replacement character
  std::string json_path;               // where in tokenizer.json the step came from, for errors
};

class PreTokenizer {
 public:
  // Compiles every pattern once (JIT when available). `source_name` prefixes error messages.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<PreTokenizer>> Create(
      std::vector<PreTokenizerStep> steps, std::string_view source_name);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Calls `emit` with each non-empty pre-token of `text`, in order. `at_start`: `text` begins the
  // whole input (Metaspace's "first" scheme). Thread-safe. Text that is not valid UTF-8 is
  // accepted: invalid bytes match no pattern item and end up in the gaps.
  void Split(std::string_view text, bool at_start,
             absl::FunctionRef<void(std::string_view)> emit) const;

 private:
  class Regex;
  struct Step {
    PreTokenizerStep::Kind kind;
    std::unique_ptr<Regex> regex;
    SplitBehavior behavior;
    bool invert;
    std::string replacement;  // kMetaspace
    PreTokenizerStep::Prepend prepend;
    bool metaspace_split;
  };
  struct Scratch;

  explicit PreTokenizer(std::vector<Step> steps);
  void Apply(size_t step, std::string_view piece, bool at_start, Scratch& scratch,
             absl::FunctionRef<void(std::string_view)> emit) const;
  void ApplyMetaspace(size_t step, std::string_view piece, bool at_start, Scratch& scratch,
                      absl::FunctionRef<void(std::string_view)> emit) const;

  std::vector<Step> steps_;
};

}  // namespace kvd::text::internal
