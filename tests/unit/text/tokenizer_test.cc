// Tokenizer encode/decode: hand-checked fixtures (tests/data/tokenizer, see its README), the
// bundled model's reference cases, and the internal pieces (pre-tokenizer splits, merge loops).
#include "text/tokenizer.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/source_dir.h"
#include "tests/unit/engine/reference_model.h"
#include "text/internal/bpe_model.h"
#include "text/internal/bpe_tokenizer_json.h"
#include "text/internal/pretokenize.h"

namespace kvd::text {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

const std::filesystem::path kDataDir =
    std::filesystem::path(kvd::test_support::SourceDir()) / "tests/data/tokenizer";

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

std::unique_ptr<Tokenizer> LoadOrDie(const std::filesystem::path& path) {
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::FromFile(path);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return tokenizer.ok() ? *std::move(tokenizer) : nullptr;
}

// Loads tiny_byte_level.json after `edit` changes its JSON.
template <typename Edit>
std::unique_ptr<Tokenizer> LoadEdited(const std::string& fixture, Edit edit) {
  nlohmann::json doc = nlohmann::json::parse(ReadFile(kDataDir / fixture));
  edit(doc);
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::FromJson(doc.dump(), fixture);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return tokenizer.ok() ? *std::move(tokenizer) : nullptr;
}

std::string DecodeOrDie(const Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                        bool skip_special_tokens = false) {
  absl::StatusOr<std::string> text = tokenizer.Decode(ids, skip_special_tokens);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.value_or("<decode failed>");
}

// ---------------------------------------------------------------------------------------------
// tiny_byte_level.json: ids 0..255 are the bytes, 256.. the merges in rank order, 273 <|bos|>
// (special, the template's BOS), 274 <|eos|> (special), 275 <tool> (not special).

struct Case {
  std::string text;
  std::vector<int32_t> ids;  // without special tokens
};

class TinyByteLevelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tokenizer_ = LoadOrDie(kDataDir / "tiny_byte_level.json");
    ASSERT_NE(tokenizer_, nullptr);
  }
  std::unique_ptr<Tokenizer> tokenizer_;
};

const std::vector<Case>& TinyCases() {
  static const auto* const cases = new std::vector<Case>{
      {"", {}},
      {"the", {116, 257}},  // t + he: (t,h) has no merge
      {" the", {258}},      // Ġ+t (rank 0), h+e (1), Ġt+he (2)
      {"the the", {116, 257, 258}},
      {"her", {257, 114}},             // h+e (rank 1) beats e+r (rank 15)
      {"it's", {105, 116, 259}},       // contraction 's split off, then merged
      {"IT'S", {73, 84, 39, 83}},      // GPT-2's contractions are lowercase only
      {"12 123", {260, 32, 260, 51}},  // digit runs keep their leading space
      {"a  b", {97, 32, 32, 98}},      // \s+(?!\S) leaves the last space to the word
      {"a   b", {97, 262, 32, 98}},
      {"\n\n", {261}},
      {"x\n\n\ny", {120, 261, 10, 121}},
      {"trailing  ", {116, 114, 97, 105, 108, 265, 262}},
      {"café", {268}},  // é is C3 A9: Ã+© (7), c+a (10), f+é (11), ca+fé (12)
      {" café", {32, 268}},
      {"\xF0\x9F\x99\x82", {269, 153, 130}},  // 🙂: F0 9F merged, 99 and 82 alone
      {"aaa", {272}},                         // a+a leftmost first, then aa+a
      {"aaaa", {270, 270}},
      {"a<|bos|>b<tool>c", {97, 273, 98, 275, 99}},
      {"<|bos", {60, 124, 98, 111, 115}},
      {"<|eos|><|eos|>", {274, 274}},
  };
  return *cases;
}

TEST_F(TinyByteLevelTest, EncodesHandCheckedCases) {
  for (const Case& c : TinyCases()) {
    EXPECT_THAT(tokenizer_->Encode(c.text, /*add_special_tokens=*/false), ElementsAreArray(c.ids))
        << "text: \"" << c.text << "\"";
  }
}

TEST_F(TinyByteLevelTest, AddsBosOnlyWhenAsked) {
  EXPECT_THAT(tokenizer_->Encode(""), ElementsAre(273));
  EXPECT_THAT(tokenizer_->Encode("", false), IsEmpty());
  EXPECT_THAT(tokenizer_->Encode(" the"), ElementsAre(273, 258));
  EXPECT_THAT(tokenizer_->Encode("<|bos|>the"), ElementsAre(273, 273, 116, 257));
  EXPECT_THAT(tokenizer_->template_prefix(), ElementsAre(273));
  EXPECT_THAT(tokenizer_->template_suffix(), IsEmpty());
}

TEST_F(TinyByteLevelTest, DecodeRoundTrips) {
  for (const Case& c : TinyCases()) {
    EXPECT_EQ(DecodeOrDie(*tokenizer_, c.ids), c.text);
    EXPECT_EQ(DecodeOrDie(*tokenizer_, tokenizer_->Encode(c.text)), "<|bos|>" + c.text);
  }
}

TEST_F(TinyByteLevelTest, SkipSpecialTokensKeepsNonSpecialAddedTokens) {
  const std::vector<int32_t> ids = tokenizer_->Encode("a<|eos|>b<tool>c");
  EXPECT_EQ(DecodeOrDie(*tokenizer_, ids, /*skip_special_tokens=*/true), "ab<tool>c");
  EXPECT_EQ(DecodeOrDie(*tokenizer_, ids), "<|bos|>a<|eos|>b<tool>c");
}

TEST_F(TinyByteLevelTest, InvalidUtf8IsEncodedByteByByteAndDecodedAsReplacement) {
  EXPECT_THAT(tokenizer_->Encode("a\xFF\xC3", false), ElementsAre(97, 255, 195));
  EXPECT_EQ(DecodeOrDie(*tokenizer_, {97, 255, 195}), "a\xEF\xBF\xBD\xEF\xBF\xBD");
  // A truncated 4-byte character is one maximal invalid subsequence: one U+FFFD.
  EXPECT_EQ(DecodeOrDie(*tokenizer_, {269, 153, 97}),
            "\xEF\xBF\xBD"
            "a");
}

TEST_F(TinyByteLevelTest, DecodeRejectsIdsOutsideTheVocab) {
  for (int32_t id : {-1, 276, 1 << 30}) {
    absl::StatusOr<std::string> text = tokenizer_->Decode(std::vector<int32_t>{97, id});
    EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument) << id;
    EXPECT_EQ(tokenizer_->TokenBytes(id).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST_F(TinyByteLevelTest, VocabularyQueries) {
  EXPECT_EQ(tokenizer_->vocab_size(), 276);
  EXPECT_EQ(tokenizer_->TokenToId("Ġthe"), 258);
  EXPECT_EQ(tokenizer_->TokenToId("<tool>"), 275);
  EXPECT_EQ(tokenizer_->TokenToId("<|bos|>"), 273);
  EXPECT_EQ(tokenizer_->TokenToId(" the"), std::nullopt);  // vocab spelling, not raw text
  EXPECT_EQ(tokenizer_->IdToToken(262), "ĠĠ");
  EXPECT_EQ(tokenizer_->IdToToken(276), std::nullopt);
  EXPECT_TRUE(tokenizer_->IsSpecial(273));
  EXPECT_TRUE(tokenizer_->IsSpecial(274));
  EXPECT_FALSE(tokenizer_->IsSpecial(275));
  EXPECT_FALSE(tokenizer_->IsSpecial(97));
  EXPECT_FALSE(tokenizer_->IsSpecial(-5));
  EXPECT_EQ(tokenizer_->TokenBytes(258).value(), " the");
  EXPECT_EQ(tokenizer_->TokenBytes(269).value(), "\xF0\x9F");
  EXPECT_EQ(tokenizer_->TokenBytes(10).value(), "\n");
  EXPECT_EQ(tokenizer_->TokenBytes(275).value(), "<tool>");
}

TEST_F(TinyByteLevelTest, RepeatedEncodesAgreeWithTheCache) {
  const std::string text = "the cafe the café it's 12 123 aaaa the";
  const std::vector<int32_t> first = tokenizer_->Encode(text);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(tokenizer_->Encode(text), first);
}

TEST_F(TinyByteLevelTest, ConcurrentEncodesAgree) {
  std::vector<std::string> texts;
  std::mt19937 rng(7);
  const std::vector<std::string> words = {"the",  " the", "café", " aaa", "12",
                                          "\n\n", " her", "it's", "🙂", " x"};
  for (int t = 0; t < 8; ++t) {
    std::string text;
    for (int i = 0; i < 400; ++i) text += words[rng() % words.size()];
    texts.push_back(text);
  }
  std::vector<std::vector<int32_t>> expected;
  for (const std::string& text : texts) expected.push_back(tokenizer_->Encode(text));
  auto fresh = LoadOrDie(kDataDir / "tiny_byte_level.json");  // cold cache, raced on below
  std::vector<std::vector<int32_t>> got(texts.size());
  std::vector<std::thread> threads;
  for (size_t t = 0; t < texts.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int repeat = 0; repeat < 5; ++repeat) got[t] = fresh->Encode(texts[t]);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(got, expected);
}

TEST_F(TinyByteLevelTest, LongWordsUseTheSameMergeOrder) {
  // 1001 a's: pairs merge leftmost first into 500 "aa", then the last aa+a.
  std::vector<int32_t> expected(499, 270);
  expected.push_back(272);
  EXPECT_EQ(tokenizer_->Encode(std::string(1001, 'a'), false), expected);
  EXPECT_EQ(tokenizer_->Encode(std::string(1000, 'a'), false), std::vector<int32_t>(500, 270));
}

TEST(TokenizerOptionsTest, AddPrefixSpace) {
  auto tokenizer = LoadEdited("tiny_byte_level.json", [](nlohmann::json& doc) {
    doc["pre_tokenizer"]["add_prefix_space"] = true;
  });
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_THAT(tokenizer->Encode("the", false), ElementsAre(258));
  EXPECT_THAT(tokenizer->Encode(" the", false), ElementsAre(258));  // no second space
  // Every stretch of text between added tokens gets its own prefix space.
  EXPECT_THAT(tokenizer->Encode("the<tool>the", false), ElementsAre(258, 275, 258));
}

TEST(TokenizerOptionsTest, AddedTokenStripAndSingleWord) {
  auto strip = LoadEdited("tiny_byte_level.json", [](nlohmann::json& doc) {
    doc["added_tokens"][2]["lstrip"] = true;
    doc["added_tokens"][2]["rstrip"] = true;
  });
  ASSERT_NE(strip, nullptr);
  EXPECT_THAT(strip->Encode("a  <tool>\n b", false), ElementsAre(97, 275, 98));

  auto plain = LoadOrDie(kDataDir / "tiny_byte_level.json");
  EXPECT_THAT(plain->Encode("a <tool> b", false), ElementsAre(97, 32, 275, 32, 98));

  auto single_word = LoadEdited("tiny_byte_level.json", [](nlohmann::json& doc) {
    doc["added_tokens"][2]["single_word"] = true;
  });
  ASSERT_NE(single_word, nullptr);
  EXPECT_THAT(single_word->Encode("x <tool> y", false), ElementsAre(120, 32, 275, 32, 121));
  EXPECT_THAT(single_word->Encode("x<tool>", false), ElementsAre(120, 60, 116, 111, 111, 108, 62));
}

TEST(TokenizerOptionsTest, NoRegexMeansOneWordPerStretch) {
  auto tokenizer = LoadEdited("tiny_byte_level.json", [](nlohmann::json& doc) {
    doc["pre_tokenizer"]["use_regex"] = false;
  });
  ASSERT_NE(tokenizer, nullptr);
  // "a the": one word, so a+Ġ... no merge, Ġ+t, h+e, Ġt+he.
  EXPECT_THAT(tokenizer->Encode("a the", false), ElementsAre(97, 258));
}

// ---------------------------------------------------------------------------------------------
// tiny_llama3_style.json: the same merges, Llama 3's Split regex + ByteLevel(use_regex=false),
// ignore_merges, merges as pairs, an extra unmergeable token "Ġxyz" (273), and added tokens
// moved up by one (274 <|bos|>, 275 <|eos|>, 276 <tool>).

TEST(Llama3StyleTest, EncodesWithSplitRegexAndIgnoreMerges) {
  auto tokenizer = LoadOrDie(kDataDir / "tiny_llama3_style.json");
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_THAT(tokenizer->Encode("1212", false), ElementsAre(260, 49, 50));  // digits in threes
  EXPECT_THAT(tokenizer->Encode(" xyz", false), ElementsAre(273));          // whole word in vocab
  EXPECT_THAT(tokenizer->Encode("xyz", false), ElementsAre(120, 121, 122));
  EXPECT_THAT(tokenizer->Encode("it's the  \n\n x", false),
              ElementsAre(105, 116, 259, 258, 262, 261, 32, 120));
  EXPECT_THAT(tokenizer->Encode("(hello", false), ElementsAre(40, 257, 108, 108, 111));
  EXPECT_THAT(tokenizer->Encode("café 🙂", false), ElementsAre(268, 32, 269, 153, 130));
  EXPECT_THAT(tokenizer->Encode(" xyz<|eos|>"), ElementsAre(274, 273, 275));
  EXPECT_EQ(DecodeOrDie(*tokenizer, tokenizer->Encode("it's the  \n\n x")),
            "<|bos|>it's the  \n\n x");
}

// ---------------------------------------------------------------------------------------------
// Pre-tokenizer Split behaviors, with Hugging Face's documented examples.

std::vector<std::string> SplitPieces(internal::PreTokenizerStep step, std::string_view text) {
  step.json_path = "test";
  absl::StatusOr<std::unique_ptr<internal::PreTokenizer>> pre =
      internal::PreTokenizer::Create({step}, "test");
  EXPECT_TRUE(pre.ok()) << pre.status();
  std::vector<std::string> pieces;
  if (pre.ok())
    (*pre)->Split(text, /*at_start=*/true,
                  [&](std::string_view piece) { pieces.emplace_back(piece); });
  return pieces;
}

TEST(PreTokenizerTest, SplitBehaviors) {
  using internal::SplitBehavior;
  internal::PreTokenizerStep step;
  step.pattern = "-";
  const std::string text = "the-final--countdown";
  step.behavior = SplitBehavior::kRemoved;
  EXPECT_THAT(SplitPieces(step, text), ElementsAre("the", "final", "countdown"));
  step.behavior = SplitBehavior::kIsolated;
  EXPECT_THAT(SplitPieces(step, text), ElementsAre("the", "-", "final", "-", "-", "countdown"));
  step.behavior = SplitBehavior::kMergedWithPrevious;
  EXPECT_THAT(SplitPieces(step, text), ElementsAre("the-", "final-", "-", "countdown"));
  step.behavior = SplitBehavior::kMergedWithNext;
  EXPECT_THAT(SplitPieces(step, text), ElementsAre("the", "-final", "-", "-countdown"));
  step.behavior = SplitBehavior::kContiguous;
  EXPECT_THAT(SplitPieces(step, text), ElementsAre("the", "-", "final", "--", "countdown"));
  step.behavior = SplitBehavior::kRemoved;
  step.invert = true;
  EXPECT_THAT(SplitPieces(step, text), ElementsAre("-", "-", "-"));
}

TEST(PreTokenizerTest, LiteralPatternAndPrefixSpace) {
  internal::PreTokenizerStep step;
  step.pattern = ".";
  step.literal = true;
  step.behavior = internal::SplitBehavior::kRemoved;
  EXPECT_THAT(SplitPieces(step, "a.b,c"), ElementsAre("a", "b,c"));

  internal::PreTokenizerStep prefix;
  prefix.kind = internal::PreTokenizerStep::Kind::kPrefixSpace;
  EXPECT_THAT(SplitPieces(prefix, "hi"), ElementsAre(" hi"));
  EXPECT_THAT(SplitPieces(prefix, " hi"), ElementsAre(" hi"));
  EXPECT_THAT(SplitPieces(prefix, ""), IsEmpty());
}

TEST(PreTokenizerTest, Gpt2PatternOnUnicode) {
  internal::PreTokenizerStep step;
  step.pattern = std::string(internal::kGpt2SplitPattern);
  EXPECT_THAT(SplitPieces(step, "Ελληνικά 12ab\u00A0x 🙂🙂!"),
              ElementsAre("Ελληνικά", " 12", "ab", "\u00A0", "x", " 🙂🙂!"));
}

// ---------------------------------------------------------------------------------------------
// The two merge loops agree (random words over an alphabet dense in merges).

TEST(BpeModelTest, ScanAndQueueMergesAgree) {
  absl::StatusOr<internal::TokenizerSpec> spec =
      internal::ParseTokenizerJson(ReadFile(kDataDir / "tiny_byte_level.json"), "tiny");
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<std::unique_ptr<internal::BpeModel>> model =
      internal::BpeModel::Create(std::move(spec->model), "tiny");
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string alphabet = "aaheingtcf12 \n'\xC3\xA9";
  std::mt19937 rng(42);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string word;
    const int length = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < length; ++i) word += alphabet[rng() % alphabet.size()];
    internal::BpeModel::Symbols by_scan = (*model)->ByteSymbols(word);
    internal::BpeModel::Symbols by_queue = by_scan;
    (*model)->MergeByScan(by_scan);
    (*model)->MergeByQueue(by_queue);
    ASSERT_EQ(std::vector<int32_t>(by_scan.begin(), by_scan.end()),
              std::vector<int32_t>(by_queue.begin(), by_queue.end()))
        << "word: \"" << word << "\"";
  }
}

// ---------------------------------------------------------------------------------------------
// Conformance with the bundled model's reference cases (made by a Python implementation of the
// Hugging Face semantics). The bundled model is part of the repository, so a missing file fails.
// KVD_MODEL_DIR points elsewhere (e.g. a model still being trained).

std::filesystem::path ReferenceDir() { return engine::testing::BundledModelDir(); }

TEST(BundledModelTokenizerTest, MatchesReferenceCases) {
  const std::filesystem::path dir = ReferenceDir();
  ASSERT_TRUE(std::filesystem::exists(dir / "tokenizer.json")) << dir / "tokenizer.json";
  ASSERT_TRUE(std::filesystem::exists(dir / "reference.json")) << dir / "reference.json";
  auto tokenizer = LoadOrDie(dir / "tokenizer.json");
  ASSERT_NE(tokenizer, nullptr);
  const nlohmann::json reference = nlohmann::json::parse(ReadFile(dir / "reference.json"));
  ASSERT_TRUE(reference.contains("tokenizer_cases"));
  const nlohmann::json& cases = reference["tokenizer_cases"];
  ASSERT_FALSE(cases.empty());
  for (const nlohmann::json& c : cases) {
    const std::string text = c["text"].get<std::string>();
    const std::vector<int32_t> ids = c["ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> ids_no_special = c["ids_no_special"].get<std::vector<int32_t>>();
    EXPECT_EQ(tokenizer->Encode(text), ids) << "text: \"" << text << "\"";
    EXPECT_EQ(tokenizer->Encode(text, false), ids_no_special) << "text: \"" << text << "\"";
    EXPECT_EQ(DecodeOrDie(*tokenizer, ids_no_special), text);
    EXPECT_EQ(DecodeOrDie(*tokenizer, ids),
              DecodeOrDie(*tokenizer, {ids.begin(), ids.begin() + 1}) + text);
  }
}

// Not a benchmark with assertions: prints encode throughput on English-like text for a glance,
// with the bundled tokenizer and with the one KVD_TOKENIZER_BENCH_FILE names, if any (e.g. a
// Llama 3 tokenizer.json; see docs/benchmarks.md).
void PrintEncodeThroughput(const std::filesystem::path& path) {
  auto tokenizer = LoadOrDie(path);
  ASSERT_NE(tokenizer, nullptr);
  const std::vector<std::string> words = {
      "the", "old",   "river", "waits", "near", "quiet", "bridge", "and",  "a",     "of",
      "to",  "in",    "is",    "that",  "it",   "was",   "for",    "on",   "are",   "with",
      "as",  "they",  "be",    "at",    "one",  "have",  "this",   "from", "or",    "had",
      "by",  "word",  "but",   "what",  "some", "we",    "can",    "out",  "other", "were",
      "all", "there", "when",  "up",    "use",  "your",  "how",    "said", "an"};
  std::mt19937 rng(1);
  std::string text;
  while (text.size() < (1 << 20)) {
    text += words[rng() % words.size()];
    const unsigned r = rng() % 16;
    text += r == 0 ? ". " : r == 1 ? ", " : r == 2 ? ".\n\n" : " ";
  }
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int32_t> ids = tokenizer->Encode(text, false);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ info ] %s: encoded %.2f MB into %zu tokens in %.3f s: %.1f MB/s\n",
              path.string().c_str(), text.size() / 1e6, ids.size(), seconds,
              text.size() / 1e6 / seconds);
  EXPECT_EQ(DecodeOrDie(*tokenizer, ids), text);
}

TEST(BundledModelTokenizerTest, PrintsEncodeThroughput) {
  PrintEncodeThroughput(ReferenceDir() / "tokenizer.json");
  if (const char* other = std::getenv("KVD_TOKENIZER_BENCH_FILE"); other != nullptr) {
    PrintEncodeThroughput(other);
  }
}

}  // namespace
}  // namespace kvd::text
