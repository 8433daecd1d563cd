// `kvd serve` over real HTTP (curl): the OpenAI endpoints (chat, completions, Responses with
// its stored responses) and Anthropic's Messages on the bundled model, streaming, and every
// error path with its status and OpenAI error type.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/integration/kvd_server_process.h"
#include "tests/support/source_dir.h"

namespace kvd::testing {
namespace {

using json = nlohmann::json;

const std::string kModel = kvd::test_support::SourceDir() + "/models/kvd-tiny";

// The document and question of docs/examples/document_question.txt, without the chat markup.
std::string DocumentQuestionText() {
  std::string prompt =
      ReadFile(kvd::test_support::SourceDir() + "/docs/examples/document_question.txt");
  const std::string head = "<|start_header_id|>user<|end_header_id|>\n\n";
  const std::string tail = "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
  return prompt.substr(head.size(), prompt.size() - head.size() - tail.size());
}

class ServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new KvdServer({"--model", kModel});
    ASSERT_GT(server_->port(), 0) << server_->logs();
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->Stop(SIGTERM), 0) << server_->logs();
    delete server_;
  }

  static HttpResult Post(const std::string& path, const json& body, const std::string& extra = "") {
    return Curl("POST", server_->url(path), body.dump(), extra);
  }
  static void ExpectError(const HttpResult& result, int status, const std::string& type,
                          const std::string& param = "") {
    EXPECT_EQ(result.status, status) << result.body;
    const json body = json::parse(result.body, nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("error")) << result.body;
    EXPECT_EQ(body["error"]["type"], type) << result.body;
    EXPECT_TRUE(body["error"]["message"].is_string());
    if (!param.empty()) {
      EXPECT_EQ(body["error"]["param"], param) << result.body;
    }
  }

  inline static KvdServer* server_ = nullptr;
};

TEST_F(ServeTest, HealthReadyVersionAndModels) {
  EXPECT_EQ(Curl("GET", server_->url("/health")).status, 200);
  EXPECT_EQ(Curl("GET", server_->url("/ready")).status, 200);
  const HttpResult version = Curl("GET", server_->url("/version"));
  EXPECT_EQ(version.status, 200);
  EXPECT_TRUE(json::parse(version.body)["version"].is_string());
  const HttpResult models = Curl("GET", server_->url("/v1/models"));
  ASSERT_EQ(models.status, 200);
  const json list = json::parse(models.body);
  EXPECT_EQ(list["object"], "list");
  EXPECT_EQ(list["data"][0]["id"], "kvd-tiny");
  EXPECT_EQ(Curl("GET", server_->url("/v1/models/kvd-tiny")).status, 200);
  ExpectError(Curl("GET", server_->url("/v1/models/gpt-5")), 404, "not_found_error");
}

TEST_F(ServeTest, CompletionAnswersTheDocumentQuestion) {
  const std::string prompt =
      ReadFile(kvd::test_support::SourceDir() + "/docs/examples/document_question.txt");
  const HttpResult result =
      Post("/v1/completions",
           {{"model", "kvd-tiny"}, {"prompt", prompt}, {"max_tokens", 16}, {"temperature", 0}});
  ASSERT_EQ(result.status, 200) << result.body;
  const json body = json::parse(result.body);
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], "KSOHB");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_GT(body["usage"]["prompt_tokens"].get<int>(), 100);
  EXPECT_EQ(
      body["usage"]["total_tokens"].get<int>(),
      body["usage"]["prompt_tokens"].get<int>() + body["usage"]["completion_tokens"].get<int>());
}

TEST_F(ServeTest, ChatCompletionUsesTheModelsTemplate) {
  const HttpResult result =
      Post("/v1/chat/completions",
           {{"model", "kvd-tiny"},
            {"messages", {{{"role", "user"}, {"content", DocumentQuestionText()}}}},
            {"temperature", 0},
            {"max_completion_tokens", 16}});
  ASSERT_EQ(result.status, 200) << result.body;
  const json body = json::parse(result.body);
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "KSOHB");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
}

// The value of a counter or gauge without labels other than model_name, from /metrics.
double MetricValue(const std::string& scrape, const std::string& name) {
  const std::string prefix = name + "{model_name=\"kvd-tiny\"} ";
  const size_t at = scrape.find(prefix);
  return at == std::string::npos ? -1.0 : std::stod(scrape.substr(at + prefix.size()));
}

TEST_F(ServeTest, KeepKvBudgetsCompactTheChatAndCountTheMerges) {
  auto ask = [](const json& keepkv) {
    // A salt for each budget: KeepKV protects (never merges) a prefix that an earlier run of the
    // same chat left in the prefix cache.
    json body = {{"model", "kvd-tiny"},
                 {"messages", {{{"role", "user"}, {"content", DocumentQuestionText()}}}},
                 {"temperature", 0},
                 {"max_completion_tokens", 16},
                 {"cache_salt", keepkv.dump()}};
    body["keepkv"] = keepkv;
    return Post("/v1/chat/completions", body);
  };
  const double merges_before =
      MetricValue(Curl("GET", server_->url("/metrics")).body, "kvd_keepkv_merges_total");
  ASSERT_GE(merges_before, 0.0);
  // A budget over the whole prompt changes nothing; null turns KeepKV off.
  for (const json& keepkv : {json{{"budget", 1.0}}, json(nullptr)}) {
    const HttpResult whole = ask(keepkv);
    ASSERT_EQ(whole.status, 200) << whole.body;
    EXPECT_EQ(json::parse(whole.body)["choices"][0]["message"]["content"], "KSOHB");
  }
  const HttpResult bounded = ask({{"budget", 0.3}, {"method", "gqa_fit"}});
  ASSERT_EQ(bounded.status, 200) << bounded.body;
  EXPECT_TRUE(json::parse(bounded.body)["choices"][0]["finish_reason"].is_string());
  const std::string scrape = Curl("GET", server_->url("/metrics")).body;
  EXPECT_GT(MetricValue(scrape, "kvd_keepkv_merges_total"), merges_before);
  EXPECT_EQ(MetricValue(scrape, "kvd_keepkv_sequences"), 0.0);
  ExpectError(ask({{"budget", 0.3}, {"alpha", 1.5}}), 400, "invalid_request_error", "keepkv.alpha");
  ExpectError(ask({{"budget", 0.3}, {"method", "magic"}}), 400, "invalid_request_error",
              "keepkv.method");
}

TEST_F(ServeTest, StreamingChatSendsRoleDeltasUsageAndDone) {
  const HttpResult result =
      Post("/v1/chat/completions",
           {{"model", "kvd-tiny"},
            {"messages", {{{"role", "user"}, {"content", DocumentQuestionText()}}}},
            {"temperature", 0},
            {"stream", true},
            {"stream_options", {{"include_usage", true}}}});
  ASSERT_EQ(result.status, 200);
  EXPECT_EQ(result.headers.at("content-type").rfind("text/event-stream", 0), 0u);
  std::vector<json> chunks;
  bool done = false;
  std::istringstream lines(result.body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    ASSERT_EQ(line.rfind("data: ", 0), 0u) << line;
    if (line == "data: [DONE]") {
      done = true;
      continue;
    }
    chunks.push_back(json::parse(line.substr(6)));
  }
  ASSERT_TRUE(done);
  ASSERT_GE(chunks.size(), 3u);
  EXPECT_EQ(chunks.front()["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  std::string finish;
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i]["object"], "chat.completion.chunk");
    const json& choice = chunks[i]["choices"][0];
    if (choice["delta"].contains("content")) text += choice["delta"]["content"].get<std::string>();
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
  }
  EXPECT_EQ(text, "KSOHB");
  EXPECT_EQ(finish, "stop");
  const json& usage_chunk = chunks.back();
  EXPECT_TRUE(usage_chunk["choices"].empty());
  EXPECT_GT(usage_chunk["usage"]["completion_tokens"].get<int>(), 0);
}

// The `data:` payloads of an SSE body, in order.
std::vector<json> SseEvents(const std::string& body) {
  std::vector<json> events;
  std::istringstream lines(body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("data: ", 0) == 0) events.push_back(json::parse(line.substr(6)));
  }
  return events;
}

TEST_F(ServeTest, AnthropicMessagesAnswerWholeAndStreamed) {
  const json body = {{"model", "kvd-tiny"},
                     {"max_tokens", 16},
                     {"temperature", 0},
                     {"messages", {{{"role", "user"}, {"content", DocumentQuestionText()}}}}};
  const HttpResult whole = Post("/v1/messages", body, "-H 'x-api-key: any'");
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json message = json::parse(whole.body);
  EXPECT_EQ(message["content"], json::parse(R"([{"type": "text", "text": "KSOHB"}])"));
  EXPECT_EQ(message["stop_reason"], "end_turn");
  json streamed_body = body;
  streamed_body["stream"] = true;
  const HttpResult streamed = Post("/v1/messages", streamed_body);
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  std::string text;
  std::vector<std::string> types;
  for (const json& event : SseEvents(streamed.body)) {
    types.push_back(event["type"]);
    if (event["type"] == "content_block_delta") text += event["delta"]["text"].get<std::string>();
  }
  EXPECT_EQ(text, "KSOHB");
  EXPECT_EQ(types.front(), "message_start");
  EXPECT_EQ(types.back(), "message_stop");
  const HttpResult refused = Post("/v1/messages", {{"messages", body["messages"]}});
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(json::parse(refused.body)["error"]["type"], "invalid_request_error");
}

TEST_F(ServeTest, ResponsesAreStoredContinuedAndDeleted) {
  const HttpResult first = Post("/v1/responses", {{"model", "kvd-tiny"},
                                                  {"input", DocumentQuestionText()},
                                                  {"temperature", 0},
                                                  {"max_output_tokens", 16}});
  ASSERT_EQ(first.status, 200) << first.body;
  const json response = json::parse(first.body);
  EXPECT_EQ(response["output"][0]["content"][0]["text"], "KSOHB");
  const std::string id = response["id"];
  const HttpResult stored = Curl("GET", server_->url("/v1/responses/" + id), "");
  ASSERT_EQ(stored.status, 200);
  EXPECT_EQ(json::parse(stored.body), response);

  const HttpResult next = Post("/v1/responses", {{"model", "kvd-tiny"},
                                                 {"previous_response_id", id},
                                                 {"input", "Q:vox"},
                                                 {"stream", true},
                                                 {"max_output_tokens", 8}});
  ASSERT_EQ(next.status, 200) << next.body;
  const std::vector<json> events = SseEvents(next.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front()["type"], "response.created");
  const json& done = events.back();
  ASSERT_TRUE(done["type"] == "response.completed" || done["type"] == "response.incomplete");
  EXPECT_GT(done["response"]["usage"]["input_tokens"].get<int>(),
            response["usage"]["total_tokens"].get<int>());
  EXPECT_GT(done["response"]["usage"]["input_tokens_details"]["cached_tokens"].get<int>(), 0);
  // The continued response's input items: the first input, the first output, the new input.
  const std::string next_id = done["response"]["id"];
  const HttpResult items =
      Curl("GET", server_->url("/v1/responses/" + next_id + "/input_items?order=asc"), "");
  ASSERT_EQ(items.status, 200) << items.body;
  const json listed = json::parse(items.body)["data"];
  ASSERT_EQ(listed.size(), 3u) << items.body;
  EXPECT_EQ(listed[0]["content"][0]["text"], DocumentQuestionText());
  EXPECT_EQ(listed[1]["content"][0]["text"], "KSOHB");
  EXPECT_EQ(listed[1]["role"], "assistant");
  EXPECT_EQ(listed[2]["content"][0]["text"], "Q:vox");
  ExpectError(Curl("GET", server_->url("/v1/responses/" + next_id + "/input_items?limit=0"), ""),
              400, "invalid_request_error", "limit");

  EXPECT_EQ(Curl("DELETE", server_->url("/v1/responses/" + id), "").status, 200);
  EXPECT_EQ(Curl("GET", server_->url("/v1/responses/" + id), "").status, 404);
  ExpectError(Post("/v1/responses", {{"input", "x"}, {"previous_response_id", id}}), 404,
              "not_found_error", "previous_response_id");
}

TEST_F(ServeTest, SeveralPromptsAndCompletionsAreIndexedPromptMajor) {
  const HttpResult result = Post("/v1/completions", {{"model", "kvd-tiny"},
                                                     {"prompt", {"the old river", "a small"}},
                                                     {"n", 2},
                                                     {"max_tokens", 3},
                                                     {"temperature", 0},
                                                     {"ignore_eos", true}});
  ASSERT_EQ(result.status, 200) << result.body;
  const json body = json::parse(result.body);
  ASSERT_EQ(body["choices"].size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(body["choices"][i]["index"], i);
  EXPECT_EQ(body["choices"][0]["text"], body["choices"][1]["text"]);  // greedy: the same
  EXPECT_EQ(body["usage"]["completion_tokens"], 12);
}

TEST_F(ServeTest, TokenizeAndDetokenizeRoundTrip) {
  // The model, where named, is the one served.
  ExpectError(Post("/tokenize", {{"model", "gpt-5"}, {"prompt", "x"}}), 404, "not_found_error",
              "model");
  ExpectError(Post("/detokenize", {{"model", 7}, {"tokens", {1}}}), 400, "invalid_request_error",
              "model");
  EXPECT_EQ(Post("/tokenize", {{"model", "kvd-tiny"}, {"prompt", "x"}}).status, 200);
  const HttpResult tokens = Post("/tokenize", {{"prompt", "the old river"}});
  ASSERT_EQ(tokens.status, 200) << tokens.body;
  const json ids = json::parse(tokens.body)["tokens"];
  EXPECT_EQ(json::parse(tokens.body)["count"], ids.size());
  const HttpResult text = Post("/detokenize", {{"tokens", ids}});
  ASSERT_EQ(text.status, 200);
  EXPECT_EQ(json::parse(text.body)["prompt"], "<|begin_of_text|>the old river");
}

TEST_F(ServeTest, BadRequestsGetOpenAiErrors) {
  ExpectError(Curl("POST", server_->url("/v1/completions"), "{not json"), 400,
              "invalid_request_error");
  ExpectError(Post("/v1/completions", json::array()), 400, "invalid_request_error");
  ExpectError(Post("/v1/completions", {{"model", "kvd-tiny"}, {"prompt", "x"}, {"foo", 1}}), 400,
              "invalid_request_error", "foo");
  ExpectError(
      Post("/v1/completions", {{"model", "kvd-tiny"}, {"prompt", "x"}, {"temperature", "hot"}}),
      400, "invalid_request_error", "temperature");
  ExpectError(Post("/v1/completions", {{"model", "kvd-tiny"}, {"prompt", "x"}, {"temperature", 3}}),
              400, "invalid_request_error", "temperature");
  // Every n out of range names n and the bound the server runs (scheduler.max_n).
  for (const int n : {0, 17, 500}) {
    const HttpResult result =
        Post("/v1/completions", {{"model", "kvd-tiny"}, {"prompt", "x"}, {"n", n}});
    ExpectError(result, 400, "invalid_request_error", "n");
    EXPECT_NE(result.body.find("[1, 16]"), std::string::npos) << result.body;
  }
  ExpectError(Post("/v1/completions", {{"model", "kvd-tiny"}}), 400, "invalid_request_error",
              "prompt");
  ExpectError(Post("/v1/completions", {{"model", "kvd-tiny"}, {"prompt", {1, 2, 99999}}}), 400,
              "invalid_request_error", "prompt");
  ExpectError(
      Post("/v1/completions", {{"model", "kvd-tiny"}, {"prompt", "x"}, {"max_tokens", 5000}}), 400,
      "invalid_request_error", "prompt");
  ExpectError(Post("/v1/completions", {{"model", "gpt-5"}, {"prompt", "x"}}), 404,
              "not_found_error", "model");
  ExpectError(Post("/v1/chat/completions", {{"model", "kvd-tiny"}, {"messages", json::array()}}),
              400, "invalid_request_error", "messages");
  ExpectError(
      Post("/v1/chat/completions",
           {{"model", "kvd-tiny"}, {"messages", {{{"role", "wizard"}, {"content", "hi"}}}}}),
      400, "invalid_request_error", "messages[0].role");
  // A malformed tool, and tools for a model whose chat template does not take them.
  ExpectError(Post("/v1/chat/completions", {{"model", "kvd-tiny"},
                                            {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                            {"tools", {{{"type", "function"}}}}}),
              400, "invalid_request_error", "tools[0]");
  ExpectError(Post("/v1/chat/completions",
                   {{"model", "kvd-tiny"},
                    {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                    {"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}}}),
              400, "invalid_request_error", "tools");
  ExpectError(
      Post("/v1/completions",
           {{"model", "kvd-tiny"}, {"prompt", "x"}, {"stream_options", {{"include_usage", true}}}}),
      400, "invalid_request_error", "stream_options");
  ExpectError(Curl("GET", server_->url("/v1/nothing-here")), 404, "not_found_error");
  const HttpResult wrong_method = Curl("GET", server_->url("/v1/completions"));
  EXPECT_EQ(wrong_method.status, 405);
  ASSERT_TRUE(wrong_method.headers.count("allow")) << wrong_method.body;
  EXPECT_EQ(wrong_method.headers.at("allow"), "POST");
  // Nothing leaked: the server still answers.
  EXPECT_EQ(Curl("GET", server_->url("/ready")).status, 200);
}

TEST_F(ServeTest, OversizedBodyIs413) {
  const std::string big(9 << 20, 'x');
  const HttpResult result = Curl("POST", server_->url("/v1/completions"),
                                 json{{"model", "kvd-tiny"}, {"prompt", big}}.dump());
  ExpectError(result, 413, "invalid_request_error");
}

TEST_F(ServeTest, ClientThatGoesAwayCancelsItsSequence) {
  // A long generation, abandoned after a fraction of a second.
  Curl("POST", server_->url("/v1/completions"),
       json{{"model", "kvd-tiny"},
            {"prompt", "the"},
            {"max_tokens", 2000},
            {"ignore_eos", true},
            {"stream", true}}
           .dump(),
       "--max-time 0.3");
  // The server notices and logs the request as 499 when its stream ends.
  for (int i = 0; i < 100 && server_->logs().find("status=499") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(server_->logs().find("status=499"), std::string::npos) << server_->logs();
}

}  // namespace
}  // namespace kvd::testing
