// Python str operations on UTF-8 text for the chat-template interpreter.
#include "text/internal/jinja/text.h"

#include <cctype>

namespace kvd::text::internal::jinja {

namespace {

// Length of the UTF-8 sequence that starts with `lead`, or 1 for a stray byte.
size_t SequenceLength(unsigned char lead) {
  if (lead >= 0xF0 && lead < 0xF8) return 4;
  if (lead >= 0xE0) return lead < 0xF0 ? 3 : 1;
  if (lead >= 0xC0) return 2;
  return 1;
}

bool IsAsciiAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char Upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }
char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

std::vector<std::string_view> CodePoints(std::string_view text) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t len = SequenceLength(static_cast<unsigned char>(text[pos]));
    if (pos + len > text.size()) len = 1;
    for (size_t i = 1; i < len; ++i) {
      if ((static_cast<unsigned char>(text[pos + i]) & 0xC0) != 0x80) {
        len = 1;
        break;
      }
    }
    out.push_back(text.substr(pos, len));
    pos += len;
  }
  return out;
}

size_t CodePointCount(std::string_view text) {
  size_t count = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++count;
  }
  return count;
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
         (c >= '\x1c' && c <= '\x1f');
}

std::string Strip(std::string_view text, const std::optional<std::string>& chars, bool left,
                  bool right) {
  std::vector<std::string_view> cps = CodePoints(text);
  auto strippable = [&](std::string_view cp) {
    if (!chars.has_value()) return cp.size() == 1 && IsSpace(cp[0]);
    for (std::string_view c : CodePoints(*chars)) {
      if (c == cp) return true;
    }
    return false;
  };
  size_t begin = 0;
  size_t end = cps.size();
  if (left) {
    while (begin < end && strippable(cps[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strippable(cps[end - 1])) --end;
  }
  std::string out;
  for (size_t i = begin; i < end; ++i) out += cps[i];
  return out;
}

std::vector<std::string> Split(std::string_view text, const std::optional<std::string>& sep,
                               int64_t max_split) {
  std::vector<std::string> parts;
  if (sep.has_value()) {
    size_t pos = 0;
    while (max_split < 0 || static_cast<int64_t>(parts.size()) < max_split) {
      const size_t found = text.find(*sep, pos);
      if (found == std::string_view::npos) break;
      parts.emplace_back(text.substr(pos, found - pos));
      pos = found + sep->size();
    }
    parts.emplace_back(text.substr(pos));
    return parts;
  }
  size_t pos = 0;
  while (true) {
    while (pos < text.size() && IsSpace(text[pos])) ++pos;
    if (pos == text.size()) break;
    if (max_split >= 0 && static_cast<int64_t>(parts.size()) == max_split) {
      // Python keeps the remainder as is, trailing whitespace stripped.
      size_t end = text.size();
      while (end > pos && IsSpace(text[end - 1])) --end;
      parts.emplace_back(text.substr(pos, end - pos));
      break;
    }
    size_t end = pos;
    while (end < text.size() && !IsSpace(text[end])) ++end;
    parts.emplace_back(text.substr(pos, end - pos));
    pos = end;
  }
  return parts;
}

std::string Replace(std::string_view text, std::string_view old, std::string_view replacement,
                    int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {
    for (std::string_view cp : CodePoints(text)) {
      if (count < 0 || done < count) {
        out += replacement;
        ++done;
      }
      out += cp;
    }
    if (count < 0 || done < count) out += replacement;
    return out;
  }
  size_t pos = 0;
  while (count < 0 || done < count) {
    const size_t found = text.find(old, pos);
    if (found == std::string_view::npos) break;
    out.append(text.substr(pos, found - pos));
    out.append(replacement);
    pos = found + old.size();
    ++done;
  }
  out.append(text.substr(pos));
  return out;
}

int64_t CountOccurrences(std::string_view text, std::string_view needle) {
  if (needle.empty()) return static_cast<int64_t>(CodePointCount(text)) + 1;
  int64_t count = 0;
  for (size_t pos = text.find(needle); pos != std::string_view::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++count;
  }
  return count;
}

std::string ToUpper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = Upper(c);
  return out;
}

std::string ToLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = Lower(c);
  return out;
}

std::string Capitalize(std::string_view text) {
  std::string out = ToLower(text);
  if (!out.empty()) out[0] = Upper(out[0]);
  return out;
}

std::string TitleCase(std::string_view text) {
  std::string out(text);
  bool previous_is_letter = false;
  for (char& c : out) {
    const bool letter = IsAsciiAlpha(c);
    c = previous_is_letter ? Lower(c) : Upper(c);
    previous_is_letter = letter;
  }
  return out;
}

std::string TitleFilter(std::string_view text) {
  std::string out(text);
  bool word_start = true;
  for (char& c : out) {
    const bool separator = IsSpace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (separator) {
      word_start = true;
      continue;
    }
    c = word_start ? Upper(c) : Lower(c);
    word_start = false;
  }
  return out;
}

}  // namespace kvd::text::internal::jinja
