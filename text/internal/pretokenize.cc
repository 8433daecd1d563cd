#include "text/internal/pretokenize.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "text/internal/utf8.h"

namespace kvd::text::internal {

// A compiled PCRE2 pattern, shared read-only by all threads.
class PreTokenizer::Regex {
 public:
  static absl::StatusOr<std::unique_ptr<Regex>> Compile(const PreTokenizerStep& step,
                                                        std::string_view source_name) {
    // MATCH_INVALID_UTF: Encode accepts any bytes; invalid sequences simply never match.
    uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
    options |= step.literal ? PCRE2_LITERAL : PCRE2_UCP;  // LITERAL refuses UCP
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(step.pattern.data()), step.pattern.size(),
                      options, &error_code, &error_offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof(message));
      return absl::InvalidArgumentError(absl::StrCat(
          std::string(source_name), ": ", step.json_path, ": bad regex \"", step.pattern,
          "\" at offset ", error_offset, ": ", reinterpret_cast<const char*>(message)));
    }
    // Without JIT support this fails and matching falls back to the interpreter.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    return std::unique_ptr<Regex>(new Regex(code));
  }

  ~Regex() { pcre2_code_free(code_); }

  pcre2_match_data* NewMatchData() const { return pcre2_match_data_create(1, nullptr); }

  // Calls on_match(start, end) for each match in order, with the iteration rules of the Oniguruma
  // find_iter Hugging Face uses: an empty match right where the previous match ended is skipped.
  template <typename OnMatch>
  void ForEachMatch(std::string_view text, pcre2_match_data* match_data, OnMatch on_match) const {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t search_from = 0;
    std::optional<size_t> last_match_end;
    while (search_from <= text.size()) {
      const int rc = pcre2_match(code_, subject, text.size(), search_from, 0, match_data, nullptr);
      // NOMATCH ends the loop; so does a matching error (resource limits), leaving the rest of
      // the text unsplit rather than failing the encode.
      if (rc < 0) return;
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_data);
      const size_t start = ovector[0];
      const size_t end = ovector[1];
      if (start == end && last_match_end == end) {
        if (search_from == text.size()) return;
        char32_t unused;
        search_from += DecodeUtf8At(text, search_from, &unused);
        continue;
      }
      search_from = end;
      last_match_end = end;
      on_match(start, end);
    }
  }

 private:
  explicit Regex(pcre2_code* code) : code_(code) {}
  pcre2_code* code_;
};

struct PreTokenizer::Scratch {
  explicit Scratch(const std::vector<Step>& steps) {
    match_data.reserve(steps.size());
    for (const Step& step : steps) {
      match_data.push_back(step.regex ? step.regex->NewMatchData() : nullptr);
    }
  }
  ~Scratch() {
    for (pcre2_match_data* m : match_data) pcre2_match_data_free(m);
  }
  std::vector<pcre2_match_data*> match_data;
};

absl::StatusOr<std::unique_ptr<PreTokenizer>> PreTokenizer::Create(
    std::vector<PreTokenizerStep> steps, std::string_view source_name) {
  std::vector<Step> compiled;
  compiled.reserve(steps.size());
  for (const PreTokenizerStep& step : steps) {
    Step s{step.kind,    nullptr,      step.behavior,       step.invert,
           step.pattern, step.prepend, step.metaspace_split};
    if (step.kind == PreTokenizerStep::Kind::kMetaspace && step.pattern.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(source_name), ": ", step.json_path, ": empty replacement"));
    }
    if (step.kind == PreTokenizerStep::Kind::kSplit) {
      absl::StatusOr<std::unique_ptr<Regex>> regex = Regex::Compile(step, source_name);
      if (!regex.ok()) return regex.status();
      s.regex = *std::move(regex);
    }
    compiled.push_back(std::move(s));
  }
  return std::unique_ptr<PreTokenizer>(new PreTokenizer(std::move(compiled)));
}

PreTokenizer::PreTokenizer(std::vector<Step> steps) : steps_(std::move(steps)) {}
PreTokenizer::~PreTokenizer() = default;

void PreTokenizer::Split(std::string_view text, bool at_start,
                         absl::FunctionRef<void(std::string_view)> emit) const {
  Scratch scratch(steps_);
  Apply(0, text, at_start, scratch, emit);
}

void PreTokenizer::ApplyMetaspace(size_t step_index, std::string_view piece, bool at_start,
                                  Scratch& scratch,
                                  absl::FunctionRef<void(std::string_view)> emit) const {
  const Step& step = steps_[step_index];
  const std::string& rep = step.replacement;
  std::string replaced;
  replaced.reserve(piece.size() + rep.size() * 4);
  const bool prepend = step.prepend == PreTokenizerStep::Prepend::kAlways ||
                       (step.prepend == PreTokenizerStep::Prepend::kFirst && at_start);
  bool starts_with_rep = piece.starts_with(rep) || piece.front() == ' ';
  if (prepend && !starts_with_rep) replaced.append(rep);
  for (char c : piece) {
    if (c == ' ') {
      replaced.append(rep);
    } else {
      replaced.push_back(c);
    }
  }
  if (!step.metaspace_split) {
    Apply(step_index + 1, replaced, at_start, scratch, emit);
    return;
  }
  // Split before each replacement character (HF's MergedWithNext on it).
  const std::string_view text = replaced;
  size_t begin = 0;
  for (size_t at = text.find(rep, rep.size()); at != std::string_view::npos;
       at = text.find(rep, at + rep.size())) {
    Apply(step_index + 1, text.substr(begin, at - begin), at_start && begin == 0, scratch, emit);
    begin = at;
  }
  Apply(step_index + 1, text.substr(begin), at_start && begin == 0, scratch, emit);
}

void PreTokenizer::Apply(size_t step_index, std::string_view piece, bool at_start, Scratch& scratch,
                         absl::FunctionRef<void(std::string_view)> emit) const {
  // Hugging Face drops empty pieces after every step.
  if (piece.empty()) return;
  if (step_index == steps_.size()) {
    emit(piece);
    return;
  }
  const Step& step = steps_[step_index];
  auto next = [&](size_t begin, size_t end) {
    Apply(step_index + 1, piece.substr(begin, end - begin), at_start && begin == 0, scratch, emit);
  };
  if (step.kind == PreTokenizerStep::Kind::kMetaspace) {
    ApplyMetaspace(step_index, piece, at_start, scratch, emit);
    return;
  }
  if (step.kind == PreTokenizerStep::Kind::kPrefixSpace) {
    if (piece.front() == ' ') {
      next(0, piece.size());
    } else {
      std::string with_space;
      with_space.reserve(piece.size() + 1);
      with_space.push_back(' ');
      with_space.append(piece);
      Apply(step_index + 1, with_space, at_start, scratch, emit);
    }
    return;
  }

  pcre2_match_data* match_data = scratch.match_data[step_index];
  const bool invert = step.invert;
  // Isolated and Removed need no look-ahead: stream the pieces.
  if (step.behavior == SplitBehavior::kIsolated || step.behavior == SplitBehavior::kRemoved) {
    const bool keep_matches = step.behavior == SplitBehavior::kIsolated || invert;
    const bool keep_gaps = step.behavior == SplitBehavior::kIsolated || !invert;
    size_t previous_end = 0;
    step.regex->ForEachMatch(piece, match_data, [&](size_t start, size_t end) {
      if (keep_gaps) next(previous_end, start);
      if (keep_matches) next(start, end);
      previous_end = end;
    });
    if (keep_gaps) next(previous_end, piece.size());
    return;
  }

  // The other behaviors merge a match with its neighbours: list the spans first, as
  // Hugging Face's NormalizedString::split does.
  struct Span {
    size_t begin;
    size_t end;
    bool is_match;
  };
  absl::InlinedVector<Span, 16> spans;
  size_t previous_end = 0;
  step.regex->ForEachMatch(piece, match_data, [&](size_t start, size_t end) {
    if (previous_end != start) spans.push_back({previous_end, start, invert});
    spans.push_back({start, end, !invert});
    previous_end = end;
  });
  if (previous_end != piece.size()) spans.push_back({previous_end, piece.size(), invert});

  absl::InlinedVector<std::pair<size_t, size_t>, 16> pieces;
  bool previous_match = false;
  switch (step.behavior) {
    case SplitBehavior::kContiguous:
      for (const Span& s : spans) {
        if (s.is_match == previous_match && !pieces.empty()) {
          pieces.back().second = s.end;
        } else {
          pieces.emplace_back(s.begin, s.end);
        }
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& s : spans) {
        if (s.is_match && !previous_match && !pieces.empty()) {
          pieces.back().second = s.end;
        } else {
          pieces.emplace_back(s.begin, s.end);
        }
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !pieces.empty()) {
          pieces.back().first = it->begin;
        } else {
          pieces.emplace_back(it->begin, it->end);
        }
        previous_match = it->is_match;
      }
      std::reverse(pieces.begin(), pieces.end());
      break;
    case SplitBehavior::kIsolated:
    case SplitBehavior::kRemoved:
      break;  // Handled above.
  }
  for (const auto& [begin, end] : pieces) next(begin, end);
}

}  // namespace kvd::text::internal
