// How documents are framed: plain framing is BOS + the document, with the published prompts
// and "\n\nAnswer: " after it; chat framing keeps the identity caches stored before the
// prompts were configurable have; any changed prompt changes the cache identity; and the
// config resolves to the framing the model can have.
#include "cache_store/kvzip/document_framing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "cache_store/kvzip/document_prompts.h"
#include "documents/document_framing_config.h"
#include "engine/model_fingerprint.h"
#include "tests/support/source_dir.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace kvd::documents {
namespace {

using cache_store::DocumentFraming;
using cache_store::FramingKind;
using ::testing::HasSubstr;

const std::filesystem::path kModelDir =
    std::filesystem::path(kvd::test_support::SourceDir()) / "models/kvd-tiny";

class DocumentFramingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tokenizer_ = text::Tokenizer::FromFile(kModelDir / "tokenizer.json")->release();
    chat_template_ = text::ChatTemplate::FromTokenizerConfig(kModelDir)->release();
  }
  static void TearDownTestSuite() {
    delete chat_template_;
    delete tokenizer_;
  }
  static std::string TokenizerDigest(const DocumentFraming& framing) {
    return engine::FingerprintModel(kModelDir, framing.IdentityParts())->tokenizer_digest;
  }

  static inline text::Tokenizer* tokenizer_ = nullptr;
  static inline text::ChatTemplate* chat_template_ = nullptr;
};

TEST_F(DocumentFramingTest, PlainFramingIsBosAndTheDocumentWithThePublishedPrompts) {
  const DocumentFraming plain{.kind = FramingKind::kPlain};
  const std::string text = "vig: QXTV\nthe river runs by the old mill";
  auto input = cache_store::PrepareDocument({&plain, nullptr, tokenizer_}, text);
  ASSERT_TRUE(input.ok()) << input.status();
  EXPECT_EQ(input->prefix_ids, tokenizer_->Encode("", /*add_special_tokens=*/true));
  EXPECT_EQ(input->prefix_ids.size(), 1u);  // BOS
  EXPECT_EQ(input->document_ids, tokenizer_->Encode(text, false));
  EXPECT_EQ(input->prefix_text, "<|begin_of_text|>" + text);

  auto prompts = cache_store::PrepareDocumentPrompts({&plain, nullptr, tokenizer_});
  ASSERT_TRUE(prompts.ok()) << prompts.status();
  EXPECT_EQ(prompts->repeat_all,
            tokenizer_->Encode("\n\nRepeat the previous context exactly.", false));
  EXPECT_EQ(prompts->answer_prefix, tokenizer_->Encode("\n\nAnswer: ", false));
  EXPECT_EQ(cache_store::QuestionTokens(*tokenizer_, *prompts, "Q:vig"),
            tokenizer_->Encode("\n\nQ:vig\n\nAnswer: ", false));

  EXPECT_EQ(cache_store::PrepareDocument({&plain, nullptr, tokenizer_}, "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(DocumentFramingTest, ChatFramingTakesTheAnswerPrefixFromTheTemplateUnlessSet) {
  DocumentFraming chat;
  auto input = cache_store::PrepareDocument({&chat, chat_template_, tokenizer_}, "vig: QXTV");
  ASSERT_TRUE(input.ok()) << input.status();
  EXPECT_EQ(input->prefix_text,
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nvig: QXTV");
  auto prompts = cache_store::PrepareDocumentPrompts({&chat, chat_template_, tokenizer_});
  ASSERT_TRUE(prompts.ok()) << prompts.status();
  EXPECT_EQ(
      prompts->answer_prefix,
      tokenizer_->Encode("<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n", false));
  chat.answer_prefix = "\n\nA: ";
  chat.repeat_prompt = "\n\nCopy it.";
  prompts = cache_store::PrepareDocumentPrompts({&chat, chat_template_, tokenizer_});
  ASSERT_TRUE(prompts.ok()) << prompts.status();
  EXPECT_EQ(prompts->answer_prefix, tokenizer_->Encode("\n\nA: ", false));
  EXPECT_EQ(prompts->repeat_all, tokenizer_->Encode("\n\nCopy it.", false));
  // Chat framing without a template is a clear error, not a crash.
  EXPECT_EQ(cache_store::PrepareDocument({&chat, nullptr, tokenizer_}, "x").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(DocumentFramingTest, EveryChangedPromptChangesTheCacheIdentity) {
  const DocumentFraming built_in{};
  // As caches stored before the prompts were configurable: the role's name alone.
  EXPECT_EQ(built_in.IdentityParts(), std::vector<std::string>{"user"});
  DocumentFraming system;
  system.role = text::DocumentRole::kSystem;
  DocumentFraming repeat;
  repeat.repeat_prompt = "\n\nRepeat the previous context.";
  DocumentFraming repeat_from;
  repeat_from.repeat_from_prompt = "\n\nRepeat from ";
  DocumentFraming answer;
  answer.answer_prefix = "";
  const DocumentFraming plain{.kind = FramingKind::kPlain};
  const DocumentFraming plain_answer{.kind = FramingKind::kPlain, .answer_prefix = "\n\nA: "};
  std::set<std::string> digests;
  for (const DocumentFraming& framing :
       {built_in, system, repeat, repeat_from, answer, plain, plain_answer}) {
    digests.insert(TokenizerDigest(framing));
  }
  EXPECT_EQ(digests.size(), 7u);
  // The same framing, the same identity; plain's default answer prefix set explicitly is the
  // same framing.
  EXPECT_EQ(TokenizerDigest(built_in), TokenizerDigest(DocumentFraming{}));
  const DocumentFraming plain_default{.kind = FramingKind::kPlain, .answer_prefix = "\n\nAnswer: "};
  EXPECT_EQ(TokenizerDigest(plain), TokenizerDigest(plain_default));
}

TEST(DocumentFramingConfigTest, AutoIsChatWithATemplateAndPlainWithout) {
  DocumentsConfig config;
  EXPECT_EQ(ResolveDocumentFraming(config, true)->kind, FramingKind::kChat);
  EXPECT_EQ(ResolveDocumentFraming(config, false)->kind, FramingKind::kPlain);
  config.framing = "plain";
  EXPECT_EQ(ResolveDocumentFraming(config, true)->kind, FramingKind::kPlain);
  config.framing = "chat";
  config.chat_role = "system";
  config.repeat_prompt = "\n\nCopy it.";
  auto chat = ResolveDocumentFraming(config, true);
  ASSERT_TRUE(chat.ok()) << chat.status();
  EXPECT_EQ(chat->role, text::DocumentRole::kSystem);
  EXPECT_EQ(chat->repeat_prompt, "\n\nCopy it.");
  EXPECT_EQ(chat->repeat_from_prompt, cache_store::kDefaultRepeatFromPrompt);
  auto refused = ResolveDocumentFraming(config, false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("documents.framing"));
}

}  // namespace
}  // namespace kvd::documents
