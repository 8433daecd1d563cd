// A completion request's `keepkv` over its tenant's defaults (absent, null, an object, bad
// values named by param), and the system prompt a chat request protects from merging.
#include "server/core/completion_params.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cache_store/keepkv/keepkv_fields.h"
#include "cache_store/store/document_payload.h"
#include "server/http/error_response.h"
#include "tests/unit/server/tiny_model_test.h"
#include "text/chat_document.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

class CompletionParamsTest : public TinyModelTest {
 protected:
  absl::StatusOr<CompletionParams> Completion(json body, const KeepKvConfig* keepkv = nullptr) {
    body["model"] = "kvd-tiny";
    body["prompt"] = "the old river";
    return ParseCompletionParams(body, ApiKind::kCompletion, Model(), nullptr, keepkv);
  }

  absl::StatusOr<CompletionParams> Chat(json messages, json extra = json::object(),
                                        const KeepKvConfig* keepkv = nullptr,
                                        const text::ChatTemplate* chat_template = nullptr) {
    extra["model"] = "kvd-tiny";
    extra["messages"] = std::move(messages);
    return ParseCompletionParams(extra, ApiKind::kChat, Model(chat_template), nullptr, keepkv);
  }

  // The text of the first `count` tokens of `prompt`.
  std::string Head(const std::vector<int32_t>& prompt, int32_t count) const {
    auto text = tokenizer_->Decode(std::span(prompt).first(static_cast<size_t>(count)));
    EXPECT_TRUE(text.ok()) << text.status();
    return text.ok() ? *text : "";
  }
};

// The param and message of an error, as the HTTP error body carries them.
struct ErrorShape {
  int status = 0;
  std::string param;
  std::string message;
};

ErrorShape ErrorOf(const absl::StatusOr<CompletionParams>& params) {
  if (params.ok()) {
    ADD_FAILURE() << "parsed without an error";
    return {};
  }
  const json error = json::parse(ErrorJson(params.status()))["error"];
  EXPECT_EQ(error["type"], "invalid_request_error");
  return {HttpStatusFor(params.status()),
          error["param"].is_string() ? error["param"].get<std::string>() : "",
          error["message"].get<std::string>()};
}

void ExpectSameParams(const cache_store::KeepKvParams& a, const cache_store::KeepKvParams& b) {
  for (const cache_store::KeepKvField& field : cache_store::kKeepKvFields) {
    EXPECT_EQ(cache_store::KeepKvFieldText(field, a), cache_store::KeepKvFieldText(field, b))
        << field.name;
  }
  EXPECT_TRUE(a == b);
}

TEST_F(CompletionParamsTest, AbsentKeepKvTakesTheTenantDefault) {
  auto params = Completion(json::object());
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_FALSE(params->request.keepkv.has_value());

  const KeepKvConfig off{.params = {.budget = {.tokens = 64}}};
  params = Completion(json::object(), &off);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_FALSE(params->request.keepkv.has_value());

  const KeepKvConfig on{
      .enabled = true,
      .params = {.budget = {.tokens = 64}, .sink = 2, .method = cache_store::MergeMethod::kConvex}};
  params = Completion(json::object(), &on);
  ASSERT_TRUE(params.ok()) << params.status();
  ASSERT_TRUE(params->request.keepkv.has_value());
  ExpectSameParams(*params->request.keepkv, on.params);
  EXPECT_EQ(params->request.keepkv->protected_prefix, 0);
}

TEST_F(CompletionParamsTest, NullKeepKvTurnsItOff) {
  const KeepKvConfig on{.enabled = true};
  auto params = Completion({{"keepkv", nullptr}}, &on);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_FALSE(params->request.keepkv.has_value());
}

TEST_F(CompletionParamsTest, AnObjectTurnsItOnOverTheDefaults) {
  // Off by default: {} turns it on with the tenant's values.
  const KeepKvConfig tenant{
      .params = {.budget = {.fraction = 0.25}, .alpha = 0.5, .sink = 1, .min_cosine = 0.3f}};
  auto params = Completion({{"keepkv", json::object()}}, &tenant);
  ASSERT_TRUE(params.ok()) << params.status();
  ASSERT_TRUE(params->request.keepkv.has_value());
  ExpectSameParams(*params->request.keepkv, tenant.params);

  params = Completion({{"keepkv",
                        {{"budget", 128},
                         {"alpha", 0.75},
                         {"window", 4},
                         {"refresh_every", 64},
                         {"recent", 2},
                         {"method", "weighted_mean"}}}},
                      &tenant);
  ASSERT_TRUE(params.ok()) << params.status();
  cache_store::KeepKvParams expected = tenant.params;
  expected.budget.tokens = 128;
  expected.alpha = 0.75;
  expected.window = 4;
  expected.refresh_every = 64;
  expected.recent = 2;
  expected.method = cache_store::MergeMethod::kWeightedMean;
  ExpectSameParams(*params->request.keepkv, expected);

  // A fraction replaces a token count; a null key keeps the default; 1 is 1.0, the whole
  // prompt; 2 is two tokens.
  const KeepKvConfig tokens{.params = {.budget = {.tokens = 512}}};
  params = Completion({{"keepkv", {{"budget", 1.0}, {"alpha", nullptr}}}}, &tokens);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(params->request.keepkv->budget.tokens, 0);
  EXPECT_EQ(params->request.keepkv->budget.fraction, 1.0);
  EXPECT_EQ(params->request.keepkv->alpha, 0.9);
  params = Completion({{"keepkv", {{"budget", 1}}}});
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(params->request.keepkv->budget.tokens, 0);
  EXPECT_EQ(params->request.keepkv->budget.fraction, 1.0);
  params = Completion({{"keepkv", {{"budget", 2}}}});
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(params->request.keepkv->budget.tokens, 2);
  params = Completion({{"keepkv", {{"budget", 2.5}}}});
  ASSERT_FALSE(params.ok());
  EXPECT_NE(params.status().message().find("must be an integer"), std::string::npos);
  // Without tenant defaults: the built-in ones.
  params = Completion({{"keepkv", json::object()}});
  ASSERT_TRUE(params.ok()) << params.status();
  ExpectSameParams(*params->request.keepkv, KeepKvConfig{}.params);
}

TEST_F(CompletionParamsTest, PartsAndFormatsOfAnyShapeAre400) {
  const json user_parts = {{"type", "text"}, {"text", "hi"}};
  ASSERT_TRUE(Chat(json::array({{{"role", "user"}, {"content", json::array({user_parts})}}})).ok());
  for (const json& part : {json{{"type", 5}, {"text", "hi"}}, json{{"type", json::array()}},
                           json{{"type", nullptr}}, json("text"), json(3)}) {
    const ErrorShape error =
        ErrorOf(Chat(json::array({{{"role", "user"}, {"content", json::array({part})}}})));
    EXPECT_EQ(error.status, 400) << part;
    EXPECT_EQ(error.param, "messages[0].content") << part;
  }
  const json messages = json::array({{{"role", "user"}, {"content", "hi"}}});
  ASSERT_TRUE(Chat(messages, {{"response_format", {{"type", "text"}}}}).ok());
  for (const json& format :
       {json{{"type", 5}}, json{{"type", json::object()}}, json("text"), json::array()}) {
    const ErrorShape error = ErrorOf(Chat(messages, {{"response_format", format}}));
    EXPECT_EQ(error.status, 400) << format;
    EXPECT_EQ(error.param, "response_format") << format;
  }
}

TEST_F(CompletionParamsTest, CacheSaltIsANonEmptyStringOfBoundedSize) {
  auto salted = Completion({{"cache_salt", "user-42"}});
  ASSERT_TRUE(salted.ok()) << salted.status();
  EXPECT_EQ(salted->request.cache_salt, "user-42");
  auto unsalted = Completion({{"cache_salt", nullptr}});
  ASSERT_TRUE(unsalted.ok()) << unsalted.status();
  EXPECT_EQ(unsalted->request.cache_salt, "");
  for (const json& salt : {json(""), json(std::string(257, 's')), json(42), json::array()}) {
    const ErrorShape error = ErrorOf(Completion({{"cache_salt", salt}}));
    EXPECT_EQ(error.status, 400) << salt;
    EXPECT_EQ(error.param, "cache_salt") << salt;
  }
}

TEST_F(CompletionParamsTest, NumSpeculativeTokensIsACountOfDraftTokensFromZero) {
  auto unset = Completion({});
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_FALSE(unset->request.num_speculative_tokens.has_value());
  auto none = Completion({{"num_speculative_tokens", 0}});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->request.num_speculative_tokens, 0);
  auto some = Completion({{"num_speculative_tokens", 6}});
  ASSERT_TRUE(some.ok()) << some.status();
  EXPECT_EQ(some->request.num_speculative_tokens, 6);
  for (const json& count : {json(-1), json(33), json(2.5), json("4"), json(true)}) {
    const ErrorShape error = ErrorOf(Completion({{"num_speculative_tokens", count}}));
    EXPECT_EQ(error.status, 400) << count;
    EXPECT_EQ(error.param, "num_speculative_tokens") << count;
  }
}

// top_p's message names the range the sampler takes: 0 is out, as is a value that is 0 as a
// float.
TEST_F(CompletionParamsTest, TopPIsInTheHalfOpenUnitRange) {
  auto whole = Completion({{"top_p", 1}});
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->request.sampling.top_p, 1.0f);
  for (const json& top_p : {json(0), json(1e-50), json(1.1), json(-0.5), json(1e300)}) {
    auto refused = Completion({{"top_p", top_p}});
    const ErrorShape error = ErrorOf(refused);
    EXPECT_EQ(error.status, 400) << top_p;
    EXPECT_EQ(error.param, "top_p") << top_p;
    EXPECT_NE(error.message.find("(0, 1]"), std::string::npos) << error.message;
  }
}

TEST_F(CompletionParamsTest, BadKeepKvIsA400NamingTheField) {
  const struct {
    json keepkv;
    std::string param;
    std::string message;
  } cases[] = {
      {true, "keepkv", "'keepkv' must be an object or null, got boolean"},
      {json::array(), "keepkv", "'keepkv' must be an object or null, got array"},
      {{{"budget", 0}},
       "keepkv.budget",
       "'keepkv.budget' must be a positive token count or a fraction in (0, 1], got 0"},
      {{{"budget", -3}},
       "keepkv.budget",
       "'keepkv.budget' must be a positive token count or a fraction in (0, 1], got -3"},
      {{{"budget", 1.5}},
       "keepkv.budget",
       "'keepkv.budget' over 1 is a token count and must be an integer, got 1.5"},
      {{{"budget", 0.0}},
       "keepkv.budget",
       "'keepkv.budget' must be a positive token count or a fraction in (0, 1], got 0"},
      {{{"budget", 3000000000}},
       "keepkv.budget",
       "'keepkv.budget' must be at most 2147483647 tokens, got 3000000000"},
      {{{"budget", "half"}},
       "keepkv.budget",
       "'keepkv.budget' must be a positive token count or a fraction in (0, 1], got string"},
      {{{"alpha", 1}}, "keepkv.alpha", "'keepkv.alpha' must be in [0, 1), got 1"},
      {{{"alpha", "0.5"}}, "keepkv.alpha", "'keepkv.alpha' must be a number, got string"},
      {{{"window", 0}}, "keepkv.window", "'keepkv.window' must be >= 1, got 0"},
      {{{"window", 2.5}}, "keepkv.window", "'keepkv.window' must be an integer, got number"},
      {{{"window", 5000000000}},
       "keepkv.window",
       "'keepkv.window' must be in [-2147483648, 2147483647], got 5000000000"},
      {{{"refresh_every", -1}},
       "keepkv.refresh_every",
       "'keepkv.refresh_every' must be >= 0 (0: never), got -1"},
      {{{"recent", -1}}, "keepkv.recent", "'keepkv.recent' must be >= 0, got -1"},
      {{{"method", "average"}},
       "keepkv.method",
       "'keepkv.method' must be one of gqa_fit, group_mean, weighted_mean, convex, evict; got "
       "\"average\""},
      {{{"method", 1}}, "keepkv.method", "'keepkv.method' must be a string, got number"},
      {{{"sink", 0}},
       "keepkv.sink",
       "unsupported parameter 'keepkv.sink' (keepkv takes " +
           cache_store::KeepKvKeys(cache_store::KeepKvScope::kRequest) + ")"},
      {{{"min_cosine", 0.5}},
       "keepkv.min_cosine",
       "unsupported parameter 'keepkv.min_cosine' (keepkv takes " +
           cache_store::KeepKvKeys(cache_store::KeepKvScope::kRequest) + ")"},
      {{{"protected_prefix", 4}},
       "keepkv.protected_prefix",
       "unsupported parameter 'keepkv.protected_prefix' (keepkv takes " +
           cache_store::KeepKvKeys(cache_store::KeepKvScope::kRequest) + ")"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.keepkv.dump());
    const ErrorShape error = ErrorOf(Completion({{"keepkv", c.keepkv}}));
    EXPECT_EQ(error.status, 400);
    EXPECT_EQ(error.param, c.param);
    EXPECT_EQ(error.message, c.message);
  }
  // Chat requests are checked the same way.
  const ErrorShape error = ErrorOf(
      Chat(json::parse(R"([{"role": "user", "content": "hi"}])"), {{"keepkv", {{"alpha", -1}}}}));
  EXPECT_EQ(error.param, "keepkv.alpha");
}

TEST_F(CompletionParamsTest, ChatProtectsItsSystemTurns) {
  const KeepKvConfig on{.enabled = true};
  const std::string system_turn =
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>";
  auto params = Chat(json::parse(R"([{"role": "system", "content": "Be brief."},
                                     {"role": "user", "content": "Q:vig"}])"),
                     json::object(), &on);
  ASSERT_TRUE(params.ok()) << params.status();
  ASSERT_TRUE(params->request.keepkv.has_value());
  const std::vector<int32_t>& prompt = params->prompts.front();
  const int32_t protected_prefix = params->request.keepkv->protected_prefix;
  EXPECT_EQ(protected_prefix, static_cast<int32_t>(tokenizer_->Encode(system_turn, false).size()));
  EXPECT_LT(protected_prefix, static_cast<int32_t>(prompt.size()));
  EXPECT_EQ(Head(prompt, protected_prefix), system_turn);

  // The last of several system (or developer) turns, later in the conversation.
  params = Chat(json::parse(R"([{"role": "system", "content": "Be brief."},
                               {"role": "user", "content": "Q:vig"},
                               {"role": "assistant", "content": "A"},
                               {"role": "developer", "content": "Answer in French."},
                               {"role": "user", "content": "Q:again"}])"),
                {{"keepkv", json::object()}});
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(Head(params->prompts.front(), params->request.keepkv->protected_prefix),
            system_turn +
                "<|start_header_id|>user<|end_header_id|>\n\nQ:vig<|eot_id|>"
                "<|start_header_id|>assistant<|end_header_id|>\n\nA<|eot_id|>"
                "<|start_header_id|>developer<|end_header_id|>\n\nAnswer in French.<|eot_id|>");

  // No system message: nothing protected. KeepKV off: no parameters at all.
  params = Chat(json::parse(R"([{"role": "user", "content": "Q:vig"}])"), json::object(), &on);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(params->request.keepkv->protected_prefix, 0);
  params = Chat(json::parse(R"([{"role": "system", "content": "Be brief."},
                               {"role": "user", "content": "Q:vig"}])"),
                {{"keepkv", nullptr}}, &on);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_FALSE(params->request.keepkv.has_value());
}

// A template that prints the system text inside the first user turn renders nothing for the
// system message alone: the protected prefix ends with the system text itself.
TEST_F(CompletionParamsTest, SystemTextInsideTheFirstUserTurn) {
  auto folded = text::ChatTemplate::Parse(
      "{% for m in messages %}{% if m['role'] == 'user' %}[INST] {% if loop.index0 == 1 and "
      "messages[0]['role'] == 'system' %}<<SYS>>{{ messages[0]['content'] }}<</SYS>> {% endif "
      "%}{{ m['content'] }} [/INST]{% elif m['role'] == 'assistant' %}{{ m['content'] }}{% endif "
      "%}{% endfor %}",
      "<|begin_of_text|>", "<|eot_id|>");
  ASSERT_TRUE(folded.ok()) << folded.status();
  const KeepKvConfig on{.enabled = true};
  auto params = Chat(json::parse(R"([{"role": "system", "content": "Be brief."},
                                     {"role": "user", "content": "Q:vig"}])"),
                     json::object(), &on, folded->get());
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(params->prompt_texts.front(), "[INST] <<SYS>>Be brief.<</SYS>> Q:vig [/INST]");
  const std::string head = Head(params->prompts.front(), params->request.keepkv->protected_prefix);
  EXPECT_GT(head.size(), 0u);
  EXPECT_TRUE(std::string("[INST] <<SYS>>Be brief.").starts_with(head)) << head;
  EXPECT_GE(head.size(), std::string("[INST] <<SYS>>Be").size()) << head;
}

// With a stored document the prompt is the text after it; the protected prefix counts from
// there, through the request's own system text.
TEST_F(CompletionParamsTest, DocumentChatProtectsTheSystemTextAfterTheDocument) {
  const json messages = json::parse(R"([{"role": "system", "content": "Be brief."},
                                        {"role": "user", "content": "Q:vig"}])");
  const std::string document = "the river runs by the old mill";
  auto split = text::SplitDocumentChat(
      *chat_template_, document, nlohmann::ordered_json::parse(messages.dump()), true,
      nlohmann::ordered_json::object(), text::DocumentRole::kSystem);
  ASSERT_TRUE(split.ok()) << split.status();
  auto payload = std::make_shared<cache_store::DocumentPayload>();
  payload->prefix_text = split->prefix;
  payload->original_length = static_cast<int32_t>(tokenizer_->Encode(split->prefix, false).size());
  DocumentContext context{
      {"doc-key", payload}, document, cache_store::FramingKind::kChat, text::DocumentRole::kSystem};
  const KeepKvConfig on{.enabled = true};
  json body = {{"model", "kvd-tiny"}, {"messages", messages}};
  auto params = ParseCompletionParams(body, ApiKind::kChat, Model(), &context, &on);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(Head(params->prompts.front(), params->request.keepkv->protected_prefix),
            "\n\nBe brief.<|eot_id|>");
}

// A chat continuing a document is the rest of the conversation's one rendering after the
// document's stored prefix; a conversation whose rendering does not start with that prefix (a
// template kwarg that changes the text before the document) is refused.
TEST_F(CompletionParamsTest, DocumentChatIsTheRenderingAfterTheStoredPrefix) {
  const json messages = json::parse(R"([{"role": "user", "content": "Q:vig"}])");
  const std::string document = "the river runs by the old mill";
  auto placed = text::MessagesWithDocument(document, nlohmann::ordered_json::parse(messages.dump()),
                                           text::DocumentRole::kSystem);
  ASSERT_TRUE(placed.ok()) << placed.status();
  auto whole = chat_template_->Render(*placed, true);
  ASSERT_TRUE(whole.ok()) << whole.status();
  const size_t end = whole->find(document) + document.size();
  auto payload = std::make_shared<cache_store::DocumentPayload>();
  payload->prefix_text = whole->substr(0, end);
  payload->original_length = static_cast<int32_t>(tokenizer_->Encode(payload->prefix_text, false).size());
  DocumentContext context{
      {"doc-key", payload}, document, cache_store::FramingKind::kChat, text::DocumentRole::kSystem};
  json body = {{"model", "kvd-tiny"}, {"messages", messages}};
  auto params = ParseCompletionParams(body, ApiKind::kChat, Model(), &context);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(params->prompt_texts.front(), whole->substr(end));
  EXPECT_EQ(params->prompts.front(), tokenizer_->Encode(whole->substr(end), false));

  payload->prefix_text = "<|begin_of_text|>another template's start" + document;
  auto refused = ParseCompletionParams(body, ApiKind::kChat, Model(), &context);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParamOf(refused.status()), "messages");
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::HasSubstr("differently from when the document was uploaded"));
}

// A document framed as plain text is continued by completions; chat cannot place it.
TEST_F(CompletionParamsTest, PlainDocumentsAreContinuedByCompletionsAndRefusedByChat) {
  const std::string document = "vig: QXTV";
  auto payload = std::make_shared<cache_store::DocumentPayload>();
  payload->prefix_text = "<|begin_of_text|>" + document;
  payload->original_length = static_cast<int32_t>(tokenizer_->Encode(document).size());
  const DocumentContext context{{"doc-key", payload}, document, cache_store::FramingKind::kPlain};
  const json chat = {{"model", "kvd-tiny"},
                     {"messages", json::parse(R"([{"role": "user", "content": "Q:vig"}])")}};
  auto refused = ParseCompletionParams(chat, ApiKind::kChat, Model(), &context);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParamOf(refused.status()), "documents");
  EXPECT_THAT(std::string(refused.status().message()), ::testing::HasSubstr("/v1/completions"));

  const json completion = {{"model", "kvd-tiny"}, {"prompt", "\n\nQ:vig"}};
  auto params = ParseCompletionParams(completion, ApiKind::kCompletion, Model(), &context);
  ASSERT_TRUE(params.ok()) << params.status();
  // The prompt goes on from the document: no BOS of its own.
  EXPECT_EQ(params->prompts.front(), tokenizer_->Encode("\n\nQ:vig", false));
}

}  // namespace
}  // namespace kvd::server
