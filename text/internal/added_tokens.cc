#include "text/internal/added_tokens.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>

#include "text/internal/utf8.h"

namespace kvd::text::internal {
namespace {

// Whether `c` is a regex \w character (Unicode letters, numbers, '_'), which single_word tokens
// must not touch.
bool IsWordCharacter(std::string_view character) {
  static pcre2_code* const word = [] {
    int error_code;
    PCRE2_SIZE error_offset;
    return pcre2_compile(reinterpret_cast<PCRE2_SPTR>(R"(^\w)"), PCRE2_ZERO_TERMINATED,
                         PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code,
                         &error_offset, nullptr);
  }();
  pcre2_match_data* match_data = pcre2_match_data_create(1, nullptr);
  const int rc = pcre2_match(word, reinterpret_cast<PCRE2_SPTR>(character.data()), character.size(),
                             0, 0, match_data, nullptr);
  pcre2_match_data_free(match_data);
  return rc > 0;
}

bool StartsWithWord(std::string_view text) {
  if (text.empty()) return false;
  char32_t c;
  const size_t n = DecodeUtf8At(text, 0, &c);
  return IsWordCharacter(text.substr(0, n));
}

bool EndsWithWord(std::string_view text) {
  if (text.empty()) return false;
  char32_t c;
  const size_t n = DecodeLastUtf8(text, &c);
  return IsWordCharacter(text.substr(text.size() - n));
}

// Start of the run of whitespace that ends `text`.
size_t TrailingWhitespaceStart(std::string_view text) {
  size_t start = text.size();
  while (start > 0) {
    char32_t c;
    const size_t n = DecodeLastUtf8(text.substr(0, start), &c);
    if (!IsUnicodeWhitespace(c)) break;
    start -= n;
  }
  return start;
}

// Length of the run of whitespace that starts `text`.
size_t LeadingWhitespaceLength(std::string_view text) {
  size_t end = 0;
  while (end < text.size()) {
    char32_t c;
    const size_t n = DecodeUtf8At(text, end, &c);
    if (!IsUnicodeWhitespace(c)) break;
    end += n;
  }
  return end;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) {
  for (const AddedToken& token : tokens) {
    if (token.content.empty()) continue;
    (token.normalized ? normalized_ : non_normalized_).Add(token);
  }
  non_normalized_.Finish();
  normalized_.Finish();
}

void AddedTokenMatcher::TokenSet::Add(const AddedToken& token) { tokens_.push_back(token); }

void AddedTokenMatcher::TokenSet::Finish() {
  for (int i = 0; i < static_cast<int>(tokens_.size()); ++i) {
    by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  }
  for (std::vector<int>& candidates : by_first_byte_) {
    std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

int AddedTokenMatcher::TokenSet::Find(std::string_view text, size_t from, size_t* pos) const {
  for (size_t i = from; i < text.size(); ++i) {
    const std::vector<int>& candidates = by_first_byte_[static_cast<unsigned char>(text[i])];
    for (int index : candidates) {
      if (text.substr(i).starts_with(tokens_[index].content)) {
        *pos = i;
        return index;
      }
    }
  }
  return -1;
}

void AddedTokenMatcher::TokenSet::Split(std::string_view text, EmitFn emit) const {
  if (tokens_.empty()) {
    if (!text.empty()) emit(text, std::nullopt);
    return;
  }
  // Mirrors AddedVocabulary::find_matches: matches are found left to right without overlap;
  // a match that single_word rejects is skipped, not retried shorter.
  size_t emitted_up_to = 0;
  size_t search_from = 0;
  size_t match_pos;
  int index;
  while ((index = Find(text, search_from, &match_pos)) >= 0) {
    const AddedToken& token = tokens_[index];
    size_t start = match_pos;
    size_t stop = match_pos + token.content.size();
    search_from = stop;
    if (token.single_word &&
        (EndsWithWord(text.substr(0, start)) || StartsWithWord(text.substr(stop)))) {
      continue;
    }
    if (token.lstrip) {
      start = std::max(TrailingWhitespaceStart(text.substr(0, start)), emitted_up_to);
    }
    if (token.rstrip) {
      stop += LeadingWhitespaceLength(text.substr(stop));
      search_from = stop;
    }
    if (emitted_up_to < start)
      emit(text.substr(emitted_up_to, start - emitted_up_to), std::nullopt);
    emit(text.substr(start, stop - start), token.id);
    emitted_up_to = stop;
  }
  if (emitted_up_to < text.size()) emit(text.substr(emitted_up_to), std::nullopt);
}

}  // namespace kvd::text::internal
