#include "text/internal/normalizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <unicode/bytestream.h>
#include <unicode/casemap.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "text/internal/utf8.h"

namespace kvd::text::internal {
namespace {

bool IsAscii(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// Calls valid(run) for each maximal run of well-formed UTF-8 and copies the bytes between runs
// to `out` unchanged: ICU takes only well-formed text, and Encode accepts any bytes.
template <typename OnValid>
void ForEachValidRun(std::string_view text, std::string* out, OnValid valid) {
  size_t run_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    char32_t c;
    const size_t n = DecodeUtf8At(text, pos, &c);
    if (c != static_cast<char32_t>(-1)) {
      pos += n;
      continue;
    }
    if (pos > run_start) valid(text.substr(run_start, pos - run_start));
    out->push_back(text[pos]);
    run_start = ++pos;
  }
  if (pos > run_start) valid(text.substr(run_start, pos - run_start));
}

icu::StringPiece AsIcu(std::string_view s) {
  return icu::StringPiece(s.data(), static_cast<int32_t>(s.size()));
}

}  // namespace

struct Normalizer::Step {
  NormalizerStep::Kind kind;
  std::string pattern;
  std::string content;
  bool strip_left = false;
  bool strip_right = false;
  const icu::Normalizer2* form = nullptr;  // owned by ICU
  std::shared_ptr<pcre2_code> regex;       // kReplace with a regex pattern
};

absl::StatusOr<std::unique_ptr<Normalizer>> Normalizer::Create(std::vector<NormalizerStep> steps,
                                                               std::string_view source_name) {
  const std::string source(source_name);
  std::vector<Step> compiled;
  for (NormalizerStep& spec : steps) {
    Step step{spec.kind, std::move(spec.pattern), std::move(spec.content), spec.strip_left,
              spec.strip_right};
    UErrorCode icu_status = U_ZERO_ERROR;
    switch (spec.kind) {
      case NormalizerStep::Kind::kNfc:
        step.form = icu::Normalizer2::getNFCInstance(icu_status);
        break;
      case NormalizerStep::Kind::kNfd:
        step.form = icu::Normalizer2::getNFDInstance(icu_status);
        break;
      case NormalizerStep::Kind::kNfkc:
        step.form = icu::Normalizer2::getNFKCInstance(icu_status);
        break;
      case NormalizerStep::Kind::kNfkd:
        step.form = icu::Normalizer2::getNFKDInstance(icu_status);
        break;
      case NormalizerStep::Kind::kReplace:
        if (step.pattern.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(source, ": ", spec.json_path, ": empty pattern"));
        }
        if (spec.regex) {
          int error_code = 0;
          PCRE2_SIZE error_offset = 0;
          pcre2_code* code = pcre2_compile(
              reinterpret_cast<PCRE2_SPTR>(step.pattern.data()), step.pattern.size(),
              PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code, &error_offset, nullptr);
          if (code == nullptr) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(error_code, message, sizeof(message));
            return absl::InvalidArgumentError(absl::StrCat(
                source, ": ", spec.json_path, ": bad regex \"", step.pattern, "\" at offset ",
                error_offset, ": ", reinterpret_cast<const char*>(message)));
          }
          step.regex.reset(code, pcre2_code_free);
        }
        break;
      default:
        break;
    }
    if (U_FAILURE(icu_status)) {
      return absl::InternalError(absl::StrCat(
          source, ": ", spec.json_path, ": ICU normalizer unavailable: ", u_errorName(icu_status)));
    }
    compiled.push_back(std::move(step));
  }
  return std::unique_ptr<Normalizer>(new Normalizer(std::move(compiled)));
}

Normalizer::Normalizer(std::vector<Step> steps) : steps_(std::move(steps)) {}
Normalizer::~Normalizer() = default;

std::string_view Normalizer::Apply(std::string_view text, std::string* buffer) const {
  std::string scratch;
  std::string_view current = text;
  // Each step that changes the text writes into `next`, which then becomes the buffer.
  auto commit = [&](std::string& next) {
    scratch.swap(next);
    buffer->swap(scratch);
    current = *buffer;
  };
  for (const Step& step : steps_) {
    std::string next;
    switch (step.kind) {
      case NormalizerStep::Kind::kNfc:
      case NormalizerStep::Kind::kNfd:
      case NormalizerStep::Kind::kNfkc:
      case NormalizerStep::Kind::kNfkd:
      case NormalizerStep::Kind::kLowercase: {
        // ASCII is invariant under every normalization form; lowercasing it is cheap.
        if (IsAscii(current)) {
          if (step.kind != NormalizerStep::Kind::kLowercase ||
              std::none_of(current.begin(), current.end(),
                           [](char c) { return c >= 'A' && c <= 'Z'; })) {
            break;
          }
        }
        next.reserve(current.size());
        ForEachValidRun(current, &next, [&](std::string_view run) {
          UErrorCode status = U_ZERO_ERROR;
          icu::StringByteSink<std::string> sink(&next);
          if (step.form != nullptr) {
            step.form->normalizeUTF8(0, AsIcu(run), sink, nullptr, status);
          } else {
            icu::CaseMap::utf8ToLower("", 0, AsIcu(run), sink, nullptr, status);
          }
          // Only memory exhaustion fails on well-formed input; keep the text unchanged then.
          if (U_FAILURE(status)) next.append(run);
        });
        commit(next);
        break;
      }
      case NormalizerStep::Kind::kStrip: {
        size_t begin = 0;
        size_t end = current.size();
        while (step.strip_left && begin < end) {
          char32_t c;
          const size_t n = DecodeUtf8At(current, begin, &c);
          if (!IsUnicodeWhitespace(c)) break;
          begin += n;
        }
        while (step.strip_right && end > begin) {
          char32_t c;
          const size_t n = DecodeLastUtf8(current.substr(0, end), &c);
          if (!IsUnicodeWhitespace(c)) break;
          end -= n;
        }
        current = current.substr(begin, end - begin);
        break;
      }
      case NormalizerStep::Kind::kPrepend:
        if (current.empty()) break;
        next.reserve(step.content.size() + current.size());
        next.append(step.content).append(current);
        commit(next);
        break;
      case NormalizerStep::Kind::kReplace: {
        if (step.regex == nullptr) {
          if (current.find(step.pattern) == std::string_view::npos) break;
          size_t last = 0;
          for (size_t at = current.find(step.pattern); at != std::string_view::npos;
               at = current.find(step.pattern, last)) {
            next.append(current.substr(last, at - last)).append(step.content);
            last = at + step.pattern.size();
          }
          next.append(current.substr(last));
          commit(next);
          break;
        }
        pcre2_match_data* match_data = pcre2_match_data_create(1, nullptr);
        const auto* subject = reinterpret_cast<PCRE2_SPTR>(current.data());
        size_t last = 0;
        size_t from = 0;
        while (from <= current.size() && pcre2_match(step.regex.get(), subject, current.size(),
                                                     from, 0, match_data, nullptr) >= 0) {
          const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_data);
          next.append(current.substr(last, ovector[0] - last)).append(step.content);
          last = ovector[1];
          from = ovector[1];
          if (ovector[0] == ovector[1]) {  // an empty match: step over one character
            if (from == current.size()) break;
            char32_t c;
            from += DecodeUtf8At(current, from, &c);
          }
        }
        pcre2_match_data_free(match_data);
        next.append(current.substr(std::min(last, current.size())));
        commit(next);
        break;
      }
    }
  }
  return current;
}

}  // namespace kvd::text::internal
