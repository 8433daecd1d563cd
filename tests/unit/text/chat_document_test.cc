// A stored document at the start of the first system message: its rendered text must be the
// same prefix for every conversation, and prefix + suffix the plain rendering.
#include "text/chat_document.h"

#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/source_dir.h"
#include "tests/unit/text/chat_template_family_templates.h"
#include "text/chat_template.h"

namespace kvd::text {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::ordered_json;

constexpr char kDocument[] = "Kvd manual, chapter 1.\n\nThe cache keeps {{ braces }} and ünïcode.";

Json Message(std::string role, std::string content) {
  return Json{{"role", std::move(role)}, {"content", std::move(content)}};
}

std::unique_ptr<ChatTemplate> Parse(std::string_view source) {
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::Parse(source, "<s>", "</s>");
  EXPECT_TRUE(tmpl.ok()) << tmpl.status();
  return tmpl.ok() ? *std::move(tmpl) : nullptr;
}

// Requests that differ in everything the document must not depend on.
const Json& Requests() {
  static const Json* const kRequests = new Json(Json::array({
      Json::array({Message("user", "Summarise it.")}),
      Json::array({Message("system", "Answer in French."), Message("user", "Bonjour"),
                   Message("assistant", "Salut."), Message("user", "Résume.")}),
      Json::array({Message("developer", "Be terse."), Message("user", "Key points?")}),
  }));
  return *kRequests;
}

// Splits every request, checks each split against the plain rendering of the combined
// conversation, and returns the prefix they all share.
std::string SharedPrefix(const ChatTemplate& tmpl, bool add_generation_prompt,
                         const Json& extra = Json::object()) {
  std::string shared;
  for (const Json& messages : Requests()) {
    absl::StatusOr<DocumentChat> split =
        SplitDocumentChat(tmpl, kDocument, messages, add_generation_prompt, extra);
    EXPECT_TRUE(split.ok()) << split.status();
    if (!split.ok()) return "<error>";
    absl::StatusOr<Json> combined = MessagesWithDocument(kDocument, messages);
    EXPECT_TRUE(combined.ok()) << combined.status();
    absl::StatusOr<std::string> plain = tmpl.Render(*combined, add_generation_prompt, extra);
    EXPECT_TRUE(plain.ok()) << plain.status();
    EXPECT_EQ(split->prefix + split->suffix, plain.value_or("<error>"));
    EXPECT_THAT(split->prefix, ::testing::EndsWith(kDocument));
    if (shared.empty()) shared = split->prefix;
    EXPECT_EQ(split->prefix, shared);
  }
  return shared;
}

TEST(MessagesWithDocument, StartsTheFirstSystemMessage) {
  absl::StatusOr<Json> placed = MessagesWithDocument("DOC", Json::array({Message("user", "q")}));
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_EQ(*placed, Json::array({Message("system", "DOC"), Message("user", "q")}));

  const Json own = Json::array({Json{{"role", "developer"}, {"content", "own"}, {"name", "ops"}},
                                Message("user", "q"), Message("system", "later")});
  placed = MessagesWithDocument("DOC", own);
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_EQ(*placed,
            Json::array({Json{{"role", "system"}, {"content", "DOC\n\nown"}, {"name", "ops"}},
                         Message("user", "q"), Message("system", "later")}));
}

TEST(MessagesWithDocument, RejectsMalformedMessages) {
  EXPECT_EQ(MessagesWithDocument("DOC", Json::object()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MessagesWithDocument("DOC", Json::array({"text"})).status().code(),
            absl::StatusCode::kInvalidArgument);
  const Json parts =
      Json::array({Json{{"role", "system"}, {"content", Json::array({Json{{"type", "text"}}})}}});
  EXPECT_THAT(MessagesWithDocument("DOC", parts).status().message(), HasSubstr("string content"));
}

TEST(SplitDocumentChat, BundledModelPrefixIsTheSystemTurnUpToTheDocument) {
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::FromTokenizerConfig(
      std::filesystem::path(kvd::test_support::SourceDir()) / "models/kvd-tiny");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  for (bool add_generation_prompt : {true, false}) {
    EXPECT_EQ(
        SharedPrefix(**tmpl, add_generation_prompt),
        std::string("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n") + kDocument);
  }
  absl::StatusOr<DocumentChat> split =
      SplitDocumentChat(**tmpl, kDocument, Requests()[1], /*add_generation_prompt=*/true);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->suffix,
            "\n\nAnswer in French.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nBonjour"
            "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nSalut.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nRésume.<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(MessagesWithDocument, UserRoleStartsTheFirstUserMessageAndRefusesASystemMessage) {
  absl::StatusOr<Json> placed =
      MessagesWithDocument("DOC", Json::array({Message("user", "Q:vig")}), DocumentRole::kUser);
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_EQ(*placed, Json::array({Message("user", "DOC\n\nQ:vig")}));
  placed =
      MessagesWithDocument("DOC", Json::array({Message("assistant", "Hi.")}), DocumentRole::kUser);
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_EQ(*placed, Json::array({Message("user", "DOC"), Message("assistant", "Hi.")}));
  const absl::Status refused =
      MessagesWithDocument("DOC", Json::array({Message("system", "s"), Message("user", "q")}),
                           DocumentRole::kUser)
          .status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("system message"));
  EXPECT_EQ(ParseDocumentRole("user").value_or(DocumentRole::kSystem), DocumentRole::kUser);
  EXPECT_EQ(ParseDocumentRole("assistant").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SplitDocumentChat, BundledModelUserRoleRendersTheTrainingFormat) {
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::FromTokenizerConfig(
      std::filesystem::path(kvd::test_support::SourceDir()) / "models/kvd-tiny");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  absl::StatusOr<DocumentChat> split =
      SplitDocumentChat(**tmpl, kDocument, Json::array({Message("user", "Q:vig")}),
                        /*add_generation_prompt=*/true, Json::object(), DocumentRole::kUser);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(
      split->prefix,
      std::string("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n") + kDocument);
  EXPECT_EQ(split->suffix, "\n\nQ:vig<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(SplitDocumentChat, Llama31PrefixIncludesTheDatedHeader) {
  std::unique_ptr<ChatTemplate> tmpl = Parse(family_templates::kLlama31Template);
  ASSERT_NE(tmpl, nullptr);
  const Json date = {{"date_string", "26 Jul 2024"}};
  EXPECT_EQ(SharedPrefix(*tmpl, true, date),
            std::string("<s><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge "
                        "Date: December 2023\nToday Date: 26 Jul 2024\n\n") +
                kDocument);
}

TEST(SplitDocumentChat, QwenNeverInjectsItsDefaultSystemPrompt) {
  for (std::string_view source :
       {family_templates::kQwen25Template, family_templates::kQwen3Template}) {
    std::unique_ptr<ChatTemplate> tmpl = Parse(source);
    ASSERT_NE(tmpl, nullptr);
    const std::string prefix = SharedPrefix(*tmpl, true);
    EXPECT_EQ(prefix, std::string("<|im_start|>system\n") + kDocument);
    absl::StatusOr<DocumentChat> split = SplitDocumentChat(*tmpl, kDocument, Requests()[0], true);
    ASSERT_TRUE(split.ok()) << split.status();
    EXPECT_THAT(split->prefix + split->suffix, Not(HasSubstr("You are Qwen")));
  }
}

TEST(SplitDocumentChat, QwenToolsFollowTheDocument) {
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "f",
      "description": "d", "parameters": {"type": "object", "properties": {}}}}])");
  for (std::string_view source :
       {family_templates::kQwen25Template, family_templates::kQwen3Template}) {
    std::unique_ptr<ChatTemplate> tmpl = Parse(source);
    ASSERT_NE(tmpl, nullptr);
    EXPECT_EQ(SharedPrefix(*tmpl, true, Json{{"tools", tools}}),
              std::string("<|im_start|>system\n") + kDocument);
  }
}

TEST(SplitDocumentChat, MistralMovesTheSystemTextSoNoPrefixExists) {
  std::unique_ptr<ChatTemplate> tmpl = Parse(family_templates::kMistralTemplate);
  ASSERT_NE(tmpl, nullptr);
  const absl::Status status = SplitDocumentChat(*tmpl, kDocument, Requests()[0], true).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("differently for different conversations"));
}

TEST(SplitDocumentChat, RejectsTemplatesThatDoNotKeepTheContentVerbatim) {
  const Json messages = Json::array({Message("user", "q")});
  auto error = [&](std::string_view source, std::string_view document = "doc") {
    std::unique_ptr<ChatTemplate> tmpl = Parse(source);
    if (tmpl == nullptr) return std::string("<parse error>");
    const absl::Status status = SplitDocumentChat(*tmpl, document, messages, true).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << source;
    return std::string(status.message());
  };
  EXPECT_THAT(error("{% for m in messages %}{{ m.content|replace('\\n', ' ') }}|{% endfor %}",
                    "line\nline"),
              HasSubstr("verbatim"));
  // Transforming the marker too hides where the document ends.
  EXPECT_THAT(error("{% for m in messages %}{{ m.content|upper }}|{% endfor %}"),
              HasSubstr("does not put"));
  EXPECT_THAT(error("{% for m in messages if m.role != 'system' %}{{ m.content }}{% endfor %}"),
              HasSubstr("does not put"));
  EXPECT_THAT(error("{{ messages[0].content }}{% for m in messages %}{{ m.content }}{% endfor %}"),
              HasSubstr("repeats"));
  // Llama 3.1 trims the system text, so trailing whitespace of a document would vanish only
  // when the request has no system message of its own.
  EXPECT_THAT(error(family_templates::kLlama31Template, "doc \n"), HasSubstr("verbatim"));
  EXPECT_THAT(error("{{ messages|length }}{{ messages[0].content }}"),
              HasSubstr("differently for different conversations"));
}

TEST(SplitDocumentChat, PassesTemplateErrorsThrough) {
  std::unique_ptr<ChatTemplate> tmpl = Parse("{{ raise_exception('no documents here') }}");
  ASSERT_NE(tmpl, nullptr);
  const absl::Status status =
      SplitDocumentChat(*tmpl, "doc", Json::array({Message("user", "q")}), true).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "no documents here");
  EXPECT_EQ(SplitDocumentChat(*tmpl, "", Json::array(), true).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvd::text
