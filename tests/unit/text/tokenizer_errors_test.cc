// Tokenizer load errors: every corrupt or unsupported tokenizer.json gets its own status code and
// a message naming the file and what is wrong with it.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/source_dir.h"
#include "text/tokenizer.h"

namespace kvd::text {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kSource[] = "corrupt/tokenizer.json";

nlohmann::json BaseDocument() {
  std::ifstream in(std::filesystem::path(kvd::test_support::SourceDir()) /
                   "tests/data/tokenizer/tiny_byte_level.json");
  std::ostringstream contents;
  contents << in.rdbuf();
  return nlohmann::json::parse(contents.str());
}

// Loads the base fixture after `edit`; returns the error (or OK when it loads).
template <typename Edit>
absl::Status LoadEdited(Edit edit) {
  nlohmann::json doc = BaseDocument();
  edit(doc);
  return Tokenizer::FromJson(doc.dump(), kSource).status();
}

// Expects `status` to have `code` (a StatusCode enumerator name) and a message naming kSource and
// matching every matcher given.
#define EXPECT_ERROR(status, expected_code, ...)                                    \
  do {                                                                              \
    const absl::Status s_ = (status);                                               \
    EXPECT_EQ(s_.code(), absl::StatusCode::expected_code) << s_;                    \
    EXPECT_THAT(std::string(s_.message()), AllOf(HasSubstr(kSource), __VA_ARGS__)); \
  } while (0)

TEST(TokenizerErrorsTest, BaseFixtureLoads) {
  EXPECT_TRUE(LoadEdited([](nlohmann::json&) {}).ok());
}

TEST(TokenizerErrorsTest, MissingFile) {
  const std::filesystem::path path = std::filesystem::path(testing::TempDir()) / "absent.json";
  const absl::Status status = Tokenizer::FromFile(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()), HasSubstr(path.string()));
}

TEST(TokenizerErrorsTest, FileErrorsNameThePath) {
  const std::filesystem::path path = std::filesystem::path(testing::TempDir()) / "not_json.json";
  std::ofstream(path) << "{\"model\": ";
  const absl::Status status = Tokenizer::FromFile(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr(path.string()), HasSubstr("not valid JSON")));
  std::filesystem::remove(path);
}

TEST(TokenizerErrorsTest, NotJson) {
  EXPECT_ERROR(Tokenizer::FromJson("vocab: [1, 2", kSource).status(), kInvalidArgument,
               HasSubstr("not valid JSON"));
  EXPECT_ERROR(Tokenizer::FromJson("[1, 2]", kSource).status(), kInvalidArgument,
               HasSubstr("expected an object"));
}

TEST(TokenizerErrorsTest, MissingModel) {
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d.erase("model"); }), kInvalidArgument,
               HasSubstr("model"), HasSubstr("missing"));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["model"].erase("vocab"); }), kInvalidArgument,
               HasSubstr("model.vocab"), HasSubstr("missing"));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["model"]["merges"] = "a b"; }),
               kInvalidArgument, HasSubstr("model.merges"), HasSubstr("expected an array"));
}

TEST(TokenizerErrorsTest, ModelTypeNotBpe) {
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["model"]["type"] = "WordPiece"; }),
               kUnimplemented, HasSubstr("model.type"), HasSubstr("\"WordPiece\""),
               HasSubstr("only BPE"));
}

TEST(TokenizerErrorsTest, MergeNamingAnUnknownToken) {
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["model"]["merges"][3] = "' zz"; }),
               kInvalidArgument, HasSubstr("model.merges[3]"),
               HasSubstr("token \"zz\" is not in the vocab"));
  // Both parts known, but their concatenation is not a token.
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["model"]["merges"][3] = "x y"; }),
               kInvalidArgument, HasSubstr("model.merges[3]"),
               HasSubstr("merged token \"xy\" is not in the vocab"));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["model"]["merges"][1] = "h e r"; }),
               kInvalidArgument, HasSubstr("model.merges[1]"),
               HasSubstr("not two tokens separated by a space"));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["model"]["merges"][1] = {"h"}; }),
               kInvalidArgument, HasSubstr("model.merges[1]"), HasSubstr("expected"));
}

TEST(TokenizerErrorsTest, VocabIdOutOfRange) {
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["model"]["vocab"]["Ġthe"] = 5000; }),
               kInvalidArgument, HasSubstr("model.vocab"), HasSubstr("\"Ġthe\" has id 5000"),
               HasSubstr("outside [0, 276)"));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["model"]["vocab"]["Ġthe"] = -1; }),
               kInvalidArgument, HasSubstr("model.vocab[\"Ġthe\"]"), HasSubstr("out of range"));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["model"]["vocab"]["Ġthe"] = "258"; }),
               kInvalidArgument, HasSubstr("model.vocab[\"Ġthe\"]"),
               HasSubstr("expected an integer id"));
}

TEST(TokenizerErrorsTest, VocabIdDuplicated) {
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["model"]["vocab"]["Ġthe"] = 257; }),
               kInvalidArgument, HasSubstr("model.vocab"), HasSubstr("id 257 is given to both"),
               HasSubstr("\"Ġthe\""), HasSubstr("\"he\""));
}

TEST(TokenizerErrorsTest, ByteSymbolMissingFromVocab) {
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["model"]["vocab"].erase("Ċ"); }),
               kInvalidArgument, HasSubstr("no token for byte 0x0A (\"Ċ\")"));
}

TEST(TokenizerErrorsTest, AddedTokenWithBadId) {
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["added_tokens"][1]["id"] = -3; }),
               kInvalidArgument, HasSubstr("added_tokens[1].id"), HasSubstr("out of range"));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["added_tokens"][1]["id"] = 9000; }),
               kInvalidArgument, HasSubstr("added_tokens[1] (\"<|eos|>\")"),
               HasSubstr("id 9000 is outside"));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["added_tokens"][1]["id"] = 97; }),
               kInvalidArgument, HasSubstr("added_tokens[1] (\"<|eos|>\")"),
               HasSubstr("id 97 already belongs to vocab token \"a\""));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["added_tokens"][1]["id"] = 273; }),
               kInvalidArgument, HasSubstr("added_tokens[1] (\"<|eos|>\")"),
               HasSubstr("id 273 is already used by added token \"<|bos|>\""));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["added_tokens"][1]["content"] = "Ġthe"; }),
               kInvalidArgument, HasSubstr("added_tokens[1] (\"Ġthe\")"),
               HasSubstr("the vocab gives it id 258"));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["added_tokens"][1].erase("id"); }),
               kInvalidArgument, HasSubstr("added_tokens[1].id"), HasSubstr("missing"));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["added_tokens"][1]["content"] = ""; }),
               kInvalidArgument, HasSubstr("added_tokens[1].content"), HasSubstr("empty"));
}

TEST(TokenizerErrorsTest, AddedTokenAlsoInTheVocabWithTheSameIdIsFine) {
  // GPT-2's <|endoftext|> is both a vocab entry and an added token.
  EXPECT_TRUE(LoadEdited([](nlohmann::json& d) { d["model"]["vocab"]["<|eos|>"] = 274; }).ok());
}

TEST(TokenizerErrorsTest, UnsupportedPreTokenizer) {
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["pre_tokenizer"]["type"] = "Whitespace"; }),
               kUnimplemented, HasSubstr("pre_tokenizer.type"),
               HasSubstr("pre_tokenizer type \"Whitespace\" is not supported"));
  // A byte-level vocab and decoder without the ByteLevel pre-tokenizer.
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["pre_tokenizer"] = nullptr; }), kUnimplemented,
               HasSubstr("decoder"), HasSubstr("needs a ByteLevel pre-tokenizer"));
  EXPECT_ERROR(
      LoadEdited([](nlohmann::json& d) {
        d["pre_tokenizer"] = {
            {"type", "Sequence"},
            {"pretokenizers",
             {d["pre_tokenizer"],
              {{"type", "Split"}, {"pattern", {{"Regex", "x"}}}, {"behavior", "Isolated"}}}}};
      }),
      kUnimplemented, HasSubstr("pre_tokenizer.pretokenizers[1]"), HasSubstr("after ByteLevel"));
}

TEST(TokenizerErrorsTest, BadSplitPattern) {
  auto with_split = [](nlohmann::json split) {
    return [split](nlohmann::json& d) {
      d["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {split, d["pre_tokenizer"]}}};
    };
  };
  EXPECT_ERROR(
      LoadEdited(with_split(
          {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}})),
      kInvalidArgument, HasSubstr("pre_tokenizer.pretokenizers[0].pattern"),
      HasSubstr("bad regex \"(unclosed\""));
  EXPECT_ERROR(LoadEdited(with_split(
                   {{"type", "Split"}, {"pattern", {{"Regex", "x"}}}, {"behavior", "Sideways"}})),
               kInvalidArgument, HasSubstr("pre_tokenizer.pretokenizers[0].behavior"),
               HasSubstr("unknown split behavior \"Sideways\""));
  EXPECT_ERROR(LoadEdited(with_split(
                   {{"type", "Split"}, {"pattern", {{"Glob", "x"}}}, {"behavior", "Isolated"}})),
               kInvalidArgument, HasSubstr("pre_tokenizer.pretokenizers[0].pattern"),
               HasSubstr("expected {\"Regex\": ...} or {\"String\": ...}"));
}

TEST(TokenizerErrorsTest, UnsupportedDecoder) {
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["decoder"]["type"] = "WordPiece"; }),
               kUnimplemented, HasSubstr("decoder.type"),
               HasSubstr("decoder type \"WordPiece\" is not supported"));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d.erase("decoder"); }), kUnimplemented,
               HasSubstr("decoder"), HasSubstr("missing"));
}

TEST(TokenizerErrorsTest, UnsupportedNormalizer) {
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) {
                 d["normalizer"] = {
                     {"type", "Sequence"},
                     {"normalizers", {{{"type", "NFC"}}, {{"type", "BertNormalizer"}}}}};
               }),
               kUnimplemented, HasSubstr("normalizer.normalizers[1].type"),
               HasSubstr("normalizer type \"BertNormalizer\" is not supported"));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) {
                 d["decoder"] = {
                     {"type", "Sequence"},
                     {"decoders",
                      {{{"type", "ByteFallback"}},
                       {{"type", "Replace"}, {"pattern", {{"String", "x"}}}, {"content", "y"}}}}};
               }),
               kUnimplemented, HasSubstr("decoder.decoders[1]"),
               HasSubstr("only Fuse (then Strip) may follow a ByteFallback decoder"));
  EXPECT_TRUE(LoadEdited([](nlohmann::json& d) {
                d["normalizer"] = {{"type", "Sequence"}, {"normalizers", nlohmann::json::array()}};
              }).ok());
}

TEST(TokenizerErrorsTest, UnsupportedOrBrokenPostProcessor) {
  EXPECT_ERROR(
      LoadEdited([](nlohmann::json& d) { d["post_processor"]["type"] = "BertProcessing"; }),
      kUnimplemented, HasSubstr("post_processor.type"),
      HasSubstr("post_processor type \"BertProcessing\" is not supported"));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["post_processor"]["special_tokens"] = {}; }),
               kInvalidArgument, HasSubstr("post_processor.single[0]"),
               HasSubstr("special token \"<|bos|>\" is not in post_processor.special_tokens"));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) {
                 d["post_processor"]["special_tokens"]["<|bos|>"]["ids"] = {700};
               }),
               kInvalidArgument, HasSubstr("post_processor"),
               HasSubstr("special token id 700 names no token"));
}

TEST(TokenizerErrorsTest, UnsupportedModelOptions) {
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["model"]["dropout"] = 0.1; }), kUnimplemented,
               HasSubstr("model.dropout"));
  EXPECT_ERROR(LoadEdited([](nlohmann::json& d) { d["model"]["end_of_word_suffix"] = "</w>"; }),
               kUnimplemented, HasSubstr("model.end_of_word_suffix"));
}

}  // namespace
}  // namespace kvd::text
