// The tokenizer.json pipeline beyond byte-level BPE: normalizers, Metaspace and Digits
// pre-tokenizers, byte_fallback and unknown tokens, the SentencePiece-style decoders, and
// streaming through them. Expected ids are worked out by hand from the small vocabularies here.
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/source_dir.h"
#include "text/incremental_decoder.h"
#include "text/tokenizer.h"

namespace kvd::text {
namespace {

using ::testing::ElementsAre;
using Json = nlohmann::json;

// A Llama 2 / Mistral 7B layout: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then
// 259 ▁, 260 h, 261 e, 262 l, 263 o, 264 ▁h, 265 ll, 266 ▁he, 267 llo, 268 ▁hello, 269 w,
// 270 r, 271 d, 272 漢. Merges in rank order: ▁ h, l l, ▁h e, ll o, ▁he llo.
Json SentencePieceJson() {
  Json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) vocab[absl::StrFormat("<0x%02X>", b)] = 3 + b;
  int id = 259;
  for (const char* token :
       {"▁", "h", "e", "l", "o", "▁h", "ll", "▁he", "llo", "▁hello", "w", "r", "d", "漢"}) {
    vocab[token] = id++;
  }
  auto added = [](int id, const char* content) {
    return Json{{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
                {"rstrip", false}, {"normalized", false}, {"special", true}};
  };
  return {{"added_tokens", {added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")}},
          {"normalizer",
           {{"type", "Sequence"},
            {"normalizers",
             {{{"type", "Prepend"}, {"prepend", "▁"}},
              {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}}},
          {"pre_tokenizer", nullptr},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single",
             {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
          {"decoder",
           {{"type", "Sequence"},
            {"decoders",
             {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
              {{"type", "ByteFallback"}},
              {{"type", "Fuse"}},
              {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
          {"model",
           {{"type", "BPE"},
            {"unk_token", "<unk>"},
            {"fuse_unk", true},
            {"byte_fallback", true},
            {"vocab", vocab},
            {"merges", {"▁ h", "l l", "▁h e", "ll o", "▁he llo"}}}}};
}

// The newer layout of the same vocabulary: a Metaspace pre-tokenizer and decoder instead of
// the Prepend/Replace normalizer and Replace/Strip decoders.
Json MetaspaceJson(const std::string& prepend_scheme) {
  Json doc = SentencePieceJson();
  doc["normalizer"] = nullptr;
  doc["pre_tokenizer"] = {{"type", "Metaspace"},
                          {"replacement", "▁"},
                          {"prepend_scheme", prepend_scheme},
                          {"split", true}};
  doc["decoder"] = {
      {"type", "Sequence"},
      {"decoders",
       {{{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", prepend_scheme}},
        {{"type", "ByteFallback"}},
        {{"type", "Fuse"}}}}};
  return doc;
}

std::unique_ptr<Tokenizer> Load(const Json& doc) {
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::FromJson(doc.dump(), "test");
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return tokenizer.ok() ? *std::move(tokenizer) : nullptr;
}

std::string DecodeOrDie(const Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                        bool skip_special_tokens = false) {
  absl::StatusOr<std::string> text = tokenizer.Decode(ids, skip_special_tokens);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.value_or("<decode failed>");
}

// Pushes ids one at a time; returns the pieces (each must be whole UTF-8 characters).
std::vector<std::string> Stream(const Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                                bool skip_special_tokens = false) {
  IncrementalDecoder decoder(tokenizer, skip_special_tokens);
  std::vector<std::string> pieces;
  for (int32_t id : ids) {
    absl::StatusOr<std::string> piece = decoder.Push(id);
    EXPECT_TRUE(piece.ok()) << piece.status();
    pieces.push_back(piece.value_or(""));
  }
  pieces.push_back(decoder.Flush());
  return pieces;
}

std::string Join(const std::vector<std::string>& pieces) {
  std::string text;
  for (const std::string& piece : pieces) text += piece;
  return text;
}

TEST(SentencePieceTest, PrependReplaceNormalizerAndMerges) {
  auto tokenizer = Load(SentencePieceJson());
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_THAT(tokenizer->Encode("hello"), ElementsAre(1, 268));
  // One word (no pre-tokenizer): ▁hello ▁ w o r l d.
  EXPECT_THAT(tokenizer->Encode("hello world", false),
              ElementsAre(268, 259, 269, 263, 270, 262, 271));
  // Each stretch between added tokens gets its own prefix.
  EXPECT_THAT(tokenizer->Encode("hello</s>hello", false), ElementsAre(268, 2, 268));
  EXPECT_EQ(DecodeOrDie(*tokenizer, tokenizer->Encode("hello world", false)), "hello world");
  // Strip removes the first character of the whole text only: here the "<" of <s> stays.
  EXPECT_EQ(DecodeOrDie(*tokenizer, tokenizer->Encode("hello world")), "<s> hello world");
  EXPECT_EQ(DecodeOrDie(*tokenizer, tokenizer->Encode("hello world"), true), "hello world");
  EXPECT_EQ(tokenizer->TokenBytes(268).value(), " hello");
  EXPECT_EQ(tokenizer->TokenBytes(3 + 0x0A).value(), "\n");
}

TEST(SentencePieceTest, ByteFallbackForCharactersOutsideTheVocab) {
  auto tokenizer = Load(SentencePieceJson());
  ASSERT_NE(tokenizer, nullptr);
  // 字 is E5 AD 97; 漢 is in the vocab.
  EXPECT_THAT(tokenizer->Encode("漢字", false),
              ElementsAre(259, 272, 3 + 0xE5, 3 + 0xAD, 3 + 0x97));
  EXPECT_EQ(DecodeOrDie(*tokenizer, tokenizer->Encode("漢字", false)), "漢字");
  // A truncated character decodes to U+FFFD.
  EXPECT_EQ(DecodeOrDie(*tokenizer, {272, 3 + 0xE5, 3 + 0xAD, 263}), "漢\xEF\xBF\xBDo");
}

TEST(SentencePieceTest, UnknownCharactersWithoutByteFallback) {
  Json doc = SentencePieceJson();
  doc["model"]["byte_fallback"] = false;
  auto fused = Load(doc);
  ASSERT_NE(fused, nullptr);
  EXPECT_THAT(fused->Encode("字字o", false), ElementsAre(259, 0, 263));
  doc["model"]["fuse_unk"] = false;
  auto unfused = Load(doc);
  ASSERT_NE(unfused, nullptr);
  EXPECT_THAT(unfused->Encode("字字o", false), ElementsAre(259, 0, 0, 263));
  doc["model"]["unk_token"] = "<missing>";
  EXPECT_EQ(Tokenizer::FromJson(doc.dump(), "test").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SentencePieceTest, StreamingHoldsBackSplitCharactersAndStripsLikeDecode) {
  auto tokenizer = Load(SentencePieceJson());
  ASSERT_NE(tokenizer, nullptr);
  // 🙂 (F0 9F 99 82) and 字 come as byte tokens: nothing until each character is complete.
  const std::vector<int32_t> ids = tokenizer->Encode("hello 🙂字", false);
  ASSERT_THAT(ids, ElementsAre(268, 259, 3 + 0xF0, 3 + 0x9F, 3 + 0x99, 3 + 0x82, 3 + 0xE5, 3 + 0xAD,
                               3 + 0x97));
  EXPECT_THAT(Stream(*tokenizer, ids),
              ElementsAre("hello", " ", "", "", "", "🙂", "", "", "字", ""));
  EXPECT_EQ(Join(Stream(*tokenizer, ids)), DecodeOrDie(*tokenizer, ids));
  for (const char* text : {"hello world", " hello", "  漢字 🙂 ", "<s>hello", ""}) {
    for (bool add_special : {false, true}) {
      for (bool skip : {false, true}) {
        const std::vector<int32_t> encoded = tokenizer->Encode(text, add_special);
        EXPECT_EQ(Join(Stream(*tokenizer, encoded, skip)), DecodeOrDie(*tokenizer, encoded, skip))
            << "text \"" << text << "\" add_special " << add_special << " skip " << skip;
      }
    }
  }
}

TEST(MetaspaceTest, PrependSchemes) {
  auto first = Load(MetaspaceJson("first"));
  ASSERT_NE(first, nullptr);
  EXPECT_THAT(first->Encode("hello hello", false), ElementsAre(268, 268));
  // "first": only the text's start gets the prefix, not text after an added token.
  EXPECT_THAT(first->Encode("<s>hello", false), ElementsAre(1, 260, 261, 267));
  EXPECT_THAT(first->Encode("hello<s>hello", false), ElementsAre(268, 1, 260, 261, 267));
  // Split before each ▁: "  hello" is ▁ | ▁hello.
  EXPECT_THAT(first->Encode("  hello", false), ElementsAre(259, 268));

  auto always = Load(MetaspaceJson("always"));
  ASSERT_NE(always, nullptr);
  EXPECT_THAT(always->Encode("<s>hello", false), ElementsAre(1, 268));

  auto never = Load(MetaspaceJson("never"));
  ASSERT_NE(never, nullptr);
  EXPECT_THAT(never->Encode("hello hello", false), ElementsAre(260, 261, 267, 268));
}

TEST(MetaspaceTest, DecoderDropsTheFirstTokensMetaspaces) {
  auto tokenizer = Load(MetaspaceJson("first"));
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(DecodeOrDie(*tokenizer, {268, 268}), "hello hello");
  EXPECT_EQ(DecodeOrDie(*tokenizer, {259, 268}), " hello");  // the first token loses its ▁
  EXPECT_EQ(DecodeOrDie(*tokenizer, {1, 268}), "<s> hello");
  EXPECT_EQ(DecodeOrDie(*tokenizer, {1, 268}, true), "hello");  // first after skipping
  EXPECT_EQ(tokenizer->FirstTokenBytesView(268).value(), "hello");
  EXPECT_EQ(tokenizer->TokenBytesView(268).value(), " hello");
  for (bool skip : {false, true}) {
    const std::vector<int32_t> ids = {1, 268, 259, 3 + 0xF0, 3 + 0x9F, 3 + 0x99, 3 + 0x82, 268};
    EXPECT_EQ(Join(Stream(*tokenizer, ids, skip)), DecodeOrDie(*tokenizer, ids, skip));
  }
  auto never = Load(MetaspaceJson("never"));
  ASSERT_NE(never, nullptr);
  EXPECT_EQ(DecodeOrDie(*never, {268, 268}), " hello hello");
}

// ---------------------------------------------------------------------------------------------
// Normalizers and Digits on the byte-level fixture (tests/data/tokenizer/README.md has its ids).

std::unique_ptr<Tokenizer> LoadTinyWith(const Json& normalizer, const Json& pre_tokenizer = {}) {
  std::ifstream in(kvd::test_support::SourceDir() + "/tests/data/tokenizer/tiny_byte_level.json");
  Json doc = Json::parse(in);
  doc["normalizer"] = normalizer;
  if (!pre_tokenizer.is_null()) doc["pre_tokenizer"] = pre_tokenizer;
  return Load(doc);
}

TEST(NormalizerTest, UnicodeForms) {
  auto nfc = LoadTinyWith({{"type", "NFC"}});
  ASSERT_NE(nfc, nullptr);
  EXPECT_THAT(nfc->Encode("cafe\u0301", false), ElementsAre(268));  // composed to café
  EXPECT_THAT(nfc->Encode("café", false), ElementsAre(268));
  EXPECT_THAT(nfc->Encode("a\xFF"
                          "cafe\u0301",
                          false),
              ElementsAre(97, 255, 268));

  auto nfd = LoadTinyWith({{"type", "NFD"}});
  ASSERT_NE(nfd, nullptr);
  EXPECT_THAT(nfd->Encode("é", false), ElementsAre(101, 204, 129));  // e + CC 81

  auto nfkc = LoadTinyWith({{"type", "NFKC"}});
  ASSERT_NE(nfkc, nullptr);
  EXPECT_THAT(nfkc->Encode("\xEF\xAC\x81", false), ElementsAre(102, 105));  // ﬁ ligature → fi
}

TEST(NormalizerTest, LowercaseStripReplaceAndNormalizedAddedTokens) {
  auto lower = LoadTinyWith({{"type", "Lowercase"}});
  ASSERT_NE(lower, nullptr);
  EXPECT_THAT(lower->Encode("THE", false), ElementsAre(116, 257));
  EXPECT_THAT(lower->Encode("CAFÉ", false), ElementsAre(268));
  // <tool> is a normalized added token: matched after lowercasing; <|EOS|> is not normalized.
  EXPECT_THAT(lower->Encode("<TOOL>", false), ElementsAre(275));
  EXPECT_THAT(lower->Encode("<|eos|>", false), ElementsAre(274));

  auto strip = LoadTinyWith({{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}});
  ASSERT_NE(strip, nullptr);
  EXPECT_THAT(strip->Encode(" \u3000the ", false), ElementsAre(116, 257, 32));

  auto replace =
      LoadTinyWith({{"type", "Replace"}, {"pattern", {{"Regex", "[0-9]+"}}}, {"content", "aa"}});
  ASSERT_NE(replace, nullptr);
  EXPECT_THAT(replace->Encode("7x42", false), ElementsAre(270, 120, 270));
}

TEST(PreTokenizerStepsTest, Digits) {
  const Json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  auto individual = LoadTinyWith(
      nullptr,
      {{"type", "Sequence"},
       {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, byte_level}}});
  ASSERT_NE(individual, nullptr);
  EXPECT_THAT(individual->Encode("a12", false), ElementsAre(97, 49, 50));
  auto contiguous = LoadTinyWith(
      nullptr,
      {{"type", "Sequence"},
       {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", false}}, byte_level}}});
  ASSERT_NE(contiguous, nullptr);
  EXPECT_THAT(contiguous->Encode("a12", false), ElementsAre(97, 260));
}

}  // namespace
}  // namespace kvd::text
