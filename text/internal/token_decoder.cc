#include "text/internal/token_decoder.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "text/internal/byte_level.h"

namespace kvd::text::internal {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte a "<0xXX>" token stands for, as ByteFallback reads it.
std::optional<char> FallbackByte(std::string_view token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') return std::nullopt;
  const int high = HexDigit(token[3]);
  const int low = HexDigit(token[4]);
  if (high < 0 || low < 0) return std::nullopt;
  return static_cast<char>(high * 16 + low);
}

std::string ReplaceAll(std::string_view text, std::string_view from, std::string_view to) {
  return absl::StrReplaceAll(
      absl::string_view(text.data(), text.size()),
      {{absl::string_view(from.data(), from.size()), absl::string_view(to.data(), to.size())}});
}

// Removes up to `start` copies of `c` from the front and `stop` from the back.
std::string StripChar(std::string text, std::string_view c, int start, int stop) {
  size_t begin = 0;
  for (int i = 0; i < start && text.compare(begin, c.size(), c) == 0; ++i) begin += c.size();
  size_t end = text.size();
  for (int i = 0;
       i < stop && end - begin >= c.size() && text.compare(end - c.size(), c.size(), c) == 0; ++i) {
    end -= c.size();
  }
  return text.substr(begin, end - begin);
}

}  // namespace

absl::StatusOr<TokenDecoder> TokenDecoder::Create(std::vector<DecoderStep> steps,
                                                  std::string_view source_name) {
  const std::string source(source_name);
  auto unsupported = [&](const DecoderStep& step, const std::string& what) {
    return absl::UnimplementedError(absl::StrCat(source, ": ", step.json_path, ": ", what));
  };
  TokenDecoder decoder;
  // Where in the chain we are: per-token steps, after ByteFallback, after Fuse.
  enum class Phase { kPerToken, kAfterByteFallback, kAfterFuse } phase = Phase::kPerToken;
  for (DecoderStep& step : steps) {
    using Kind = DecoderStep::Kind;
    if (step.kind == Kind::kByteLevel) {
      if (steps.size() != 1) {
        return unsupported(step, "a ByteLevel decoder combined with other decoders");
      }
      decoder.byte_level_ = true;
      continue;
    }
    if (step.kind == Kind::kFuse) {
      phase = Phase::kAfterFuse;
      continue;
    }
    if (phase == Phase::kAfterFuse) {
      if (step.kind != Kind::kStrip || step.strip_stop != 0 || decoder.leading_strip_count_ != 0) {
        return unsupported(step,
                           "after Fuse, only one Strip of leading characters (stop 0) is "
                           "supported");
      }
      decoder.leading_strip_count_ = step.strip_start;
      decoder.leading_strip_char_ = step.content;
      continue;
    }
    if (phase == Phase::kAfterByteFallback) {
      return unsupported(step, "only Fuse (then Strip) may follow a ByteFallback decoder");
    }
    if (step.kind == Kind::kByteFallback) {
      decoder.byte_fallback_ = true;
      phase = Phase::kAfterByteFallback;
      continue;
    }
    if (step.kind == Kind::kMetaspace && step.metaspace_strips_first) decoder.first_differs_ = true;
    decoder.per_token_.push_back(std::move(step));
  }
  return decoder;
}

std::optional<std::string> TokenDecoder::FirstBytes(std::string_view token) const {
  if (!first_differs_) return std::nullopt;
  std::string first = Transform(token, true);
  if (first == Transform(token, false)) return std::nullopt;
  return first;
}

std::string TokenDecoder::Transform(std::string_view token, bool first) const {
  if (byte_level_) {
    // A character outside the byte alphabet keeps the token as its own UTF-8, as HF does.
    std::optional<std::string> bytes = DecodeByteLevel(token);
    return bytes.has_value() ? *std::move(bytes) : std::string(token);
  }
  std::string text(token);
  for (const DecoderStep& step : per_token_) {
    switch (step.kind) {
      case DecoderStep::Kind::kReplace:
        text = ReplaceAll(text, step.pattern, step.content);
        break;
      case DecoderStep::Kind::kMetaspace:
        // The first token loses every metaspace (HF's Metaspace decoder), the others turn
        // them into spaces.
        text = ReplaceAll(text, step.pattern, first && step.metaspace_strips_first ? "" : " ");
        break;
      case DecoderStep::Kind::kStrip:
        text = StripChar(std::move(text), step.content, step.strip_start, step.strip_stop);
        break;
      default:
        break;
    }
  }
  if (byte_fallback_) {
    if (const std::optional<char> byte = FallbackByte(text); byte.has_value()) {
      return std::string(1, *byte);
    }
  }
  return text;
}

}  // namespace kvd::text::internal
