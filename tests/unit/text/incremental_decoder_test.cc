// IncrementalDecoder: streamed text is always valid UTF-8 and adds up to Tokenizer::Decode.
#include "text/incremental_decoder.h"

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/source_dir.h"
#include "text/tokenizer.h"

namespace kvd::text {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";

// An independent check of well-formed UTF-8 (Unicode Table 3-7).
bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;
    if (b < 0x80) {
      n = 1;
    } else if (b >= 0xC2 && b <= 0xDF) {
      n = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      n = 3;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      n = 4;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return false;
    }
    i += n;
  }
  return true;
}

class IncrementalDecoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer =
        Tokenizer::FromFile(std::filesystem::path(kvd::test_support::SourceDir()) /
                            "tests/data/tokenizer/tiny_byte_level.json");
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    tokenizer_ = *std::move(tokenizer);
  }

  // Pushes `ids` one by one; every piece must be valid UTF-8. Returns the concatenation.
  std::string Stream(const std::vector<int32_t>& ids, bool skip_special_tokens = false) {
    IncrementalDecoder decoder(*tokenizer_, skip_special_tokens);
    std::string text;
    for (int32_t id : ids) {
      absl::StatusOr<std::string> piece = decoder.Push(id);
      EXPECT_TRUE(piece.ok()) << piece.status();
      if (!piece.ok()) continue;
      EXPECT_TRUE(IsValidUtf8(*piece)) << "after id " << id;
      text += *piece;
    }
    const std::string rest = decoder.Flush();
    EXPECT_TRUE(IsValidUtf8(rest));
    return text + rest;
  }

  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(IncrementalDecoderTest, HoldsBackCharactersSplitAcrossTokens) {
  // 🙂 is F0 9F | 99 | 82 in this vocab: nothing comes out until its last byte.
  IncrementalDecoder decoder(*tokenizer_);
  EXPECT_EQ(decoder.Push(269).value(), "");
  EXPECT_EQ(decoder.pending_bytes(), 2u);
  EXPECT_EQ(decoder.Push(153).value(), "");
  EXPECT_EQ(decoder.Push(130).value(), "\xF0\x9F\x99\x82");
  EXPECT_EQ(decoder.pending_bytes(), 0u);
  EXPECT_EQ(decoder.Push(97).value(), "a");
  EXPECT_EQ(decoder.Flush(), "");
}

TEST_F(IncrementalDecoderTest, StreamedTextEqualsDecode) {
  const std::string text =
      "café 🙂 and 中文字符, Ελληνικά; 👍🏽<|eos|> the end\n";
  const std::vector<int32_t> ids = tokenizer_->Encode(text);
  EXPECT_EQ(Stream(ids), tokenizer_->Decode(ids).value());
  EXPECT_EQ(Stream(ids), "<|bos|>" + text);
  EXPECT_EQ(Stream(ids, /*skip_special_tokens=*/true), tokenizer_->Decode(ids, true).value());
}

TEST_F(IncrementalDecoderTest, RandomByteTokensMatchDecode) {
  // Byte tokens in random order: lots of invalid and truncated sequences.
  std::mt19937 rng(3);
  const std::vector<int32_t> interesting = {0x41, 0x20, 0xC3, 0xA9, 0xE4, 0xB8, 0xAD, 0xF0, 0x9F,
                                            0x99, 0x82, 0xED, 0xA0, 0x80, 0xFF, 0xC0, 269,  263};
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<int32_t> ids(1 + rng() % 12);
    for (int32_t& id : ids) id = interesting[rng() % interesting.size()];
    EXPECT_EQ(Stream(ids), tokenizer_->Decode(ids).value());
  }
}

TEST_F(IncrementalDecoderTest, FlushTurnsADanglingPartialCharacterIntoReplacement) {
  IncrementalDecoder decoder(*tokenizer_);
  EXPECT_EQ(decoder.Push(97).value(), "a");
  EXPECT_EQ(decoder.Push(269).value(), "");  // F0 9F: the start of a 4-byte character
  EXPECT_EQ(decoder.Flush(), kReplacement);
  EXPECT_EQ(decoder.Flush(), "");
  EXPECT_EQ(decoder.Push(0xC3).value(), "");
  EXPECT_EQ(decoder.Flush(), kReplacement);
}

TEST_F(IncrementalDecoderTest, BytesThatCannotCompleteAreReplacedAtOnce) {
  IncrementalDecoder decoder(*tokenizer_);
  EXPECT_EQ(decoder.Push(269).value(), "");
  // 'A' ends the partial character: it is replaced, and 'A' follows without waiting.
  EXPECT_EQ(decoder.Push(65).value(), std::string(kReplacement) + "A");
  EXPECT_EQ(decoder.Push(0xFF).value(), kReplacement);  // never valid anywhere
}

TEST_F(IncrementalDecoderTest, SpecialTokens) {
  IncrementalDecoder keep(*tokenizer_);
  EXPECT_EQ(keep.Push(273).value(), "<|bos|>");
  IncrementalDecoder skip(*tokenizer_, /*skip_special_tokens=*/true);
  EXPECT_EQ(skip.Push(273).value(), "");
  EXPECT_EQ(skip.Push(275).value(), "<tool>");  // not special
}

TEST_F(IncrementalDecoderTest, UnknownIdIsAnErrorAndChangesNothing) {
  IncrementalDecoder decoder(*tokenizer_);
  EXPECT_EQ(decoder.Push(269).value(), "");
  EXPECT_EQ(decoder.Push(tokenizer_->vocab_size()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(decoder.Push(-1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(decoder.Push(153).value(), "");
  EXPECT_EQ(decoder.Push(130).value(), "\xF0\x9F\x99\x82");
}

}  // namespace
}  // namespace kvd::text
