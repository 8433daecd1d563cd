// `kvd serve` with tenants: API keys, a tenant over its request rate while another is served, a
// request over a whole token limit, SIGHUP reloading the tenants, and a /metrics scrape under
// load that promtool accepts.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <thread>

#include "nlohmann/json.hpp"
#include "tests/integration/kvd_server_process.h"
#include "tests/support/source_dir.h"

namespace kvd::testing {
namespace {

using json = nlohmann::json;

const std::string kModel = kvd::test_support::SourceDir() + "/models/kvd-tiny";

// `limited` may send 2 requests per minute, `token_limited` 64 tokens.
std::string TenantsYaml(const std::vector<std::pair<std::string, std::string>>& tenants,
                        const std::string& limited, const std::string& token_limited = "") {
  std::string yaml = "tenants:\n";
  for (const auto& [id, key] : tenants) {
    yaml += "  - id: " + id + "\n    key_sha256: [\"" + Digest(key) + "\"]\n";
    if (id == limited) yaml += "    requests_per_minute: 2\n";
    if (id == token_limited) yaml += "    tokens_per_minute: 64\n";
  }
  return yaml;
}

// Waits (bounded) until the gauge `name` of the server's /metrics reads `value`.
bool WaitForGauge(const KvdServer& server, const std::string& name, int value) {
  const std::string line =
      name + "{model_name=\"kvd-tiny\",engine=\"0\"} " + std::to_string(value) + "\n";
  for (int i = 0; i < 500; ++i) {
    if (Curl("GET", server.url("/metrics")).body.find(line) != std::string::npos) return true;
  }
  return false;
}

class ServeTenantsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kvd_tenants_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    config_ = dir_ / "config.yaml";
    std::ofstream(config_) << TenantsYaml(
        {{"alpha", "key-alpha"}, {"beta", "key-beta"}, {"delta", "key-delta"}}, "beta", "delta");
    server_ = std::make_unique<KvdServer>(
        std::vector<std::string>{"--model", kModel, "--config", config_.string()});
    ASSERT_GT(server_->port(), 0) << server_->logs();
  }
  void TearDown() override {
    EXPECT_EQ(server_->Stop(SIGTERM), 0) << server_->logs();
    std::filesystem::remove_all(dir_);
  }

  HttpResult Complete(const std::string& key, int max_tokens = 2) {
    const json body = {{"model", "kvd-tiny"},
                       {"prompt", "the old river"},
                       {"max_tokens", max_tokens},
                       {"ignore_eos", true}};
    return Curl("POST", server_->url("/v1/completions"), body.dump(),
                key.empty() ? "" : "-H 'Authorization: Bearer " + key + "'");
  }
  static std::string ErrorType(const HttpResult& result) {
    const json body = json::parse(result.body, nullptr, false);
    return body.is_object() && body.contains("error") ? body["error"].value("type", "") : "";
  }

  std::filesystem::path dir_;
  std::filesystem::path config_;
  std::unique_ptr<KvdServer> server_;
};

TEST_F(ServeTenantsTest, KeysDecideWhoIsServed) {
  HttpResult result = Complete("");
  EXPECT_EQ(result.status, 401);
  EXPECT_EQ(ErrorType(result), "authentication_error");
  result = Complete("not-a-key");
  EXPECT_EQ(result.status, 401);
  EXPECT_EQ(ErrorType(result), "authentication_error");
  EXPECT_EQ(Complete("key-alpha").status, 200);
  EXPECT_EQ(Curl("GET", server_->url("/v1/models")).status, 401);
  EXPECT_EQ(Curl("GET", server_->url("/health")).status, 200);  // probes need no key
}

TEST_F(ServeTenantsTest, TenantOverItsRateIsRefusedWhileAnotherIsServed) {
  EXPECT_EQ(Complete("key-beta").status, 200);
  EXPECT_EQ(Complete("key-beta").status, 200);
  const HttpResult refused = Complete("key-beta");
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_EQ(ErrorType(refused), "rate_limit_error");
  ASSERT_TRUE(refused.headers.count("retry-after"));
  EXPECT_GT(std::stoi(refused.headers.at("retry-after")), 0);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Complete("key-alpha").status, 200);
}

TEST_F(ServeTenantsTest, ARequestOverTheWholeTokenLimitIs400NotARetryForever) {
  // delta may use 64 tokens a minute; a request charged more can never be admitted.
  const HttpResult refused = Complete("key-delta", 100);
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(ErrorType(refused), "invalid_request_error");
  EXPECT_FALSE(refused.headers.count("retry-after")) << refused.body;
  const json error = json::parse(refused.body)["error"];
  EXPECT_EQ(error["code"], "request_exceeds_limit");
  EXPECT_NE(error["message"].get<std::string>().find("tokens_per_minute: 64"), std::string::npos)
      << refused.body;
  // It took nothing: a request that fits is served, and the rest of the minute is 429.
  EXPECT_EQ(Complete("key-delta", 40).status, 200);
  const HttpResult later = Complete("key-delta", 40);
  EXPECT_EQ(later.status, 429) << later.body;
  EXPECT_TRUE(later.headers.count("retry-after"));
}

// A chat without max_tokens may use the rest of the context: for a tenant whose minute holds
// fewer tokens, the default is what the minute leaves after the prompt, not a refusal.
TEST_F(ServeTenantsTest, AChatWithoutMaxTokensFitsTheTenantsMinute) {
  const json body = {{"model", "kvd-tiny"},
                     {"temperature", 0},
                     {"ignore_eos", true},
                     {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  const HttpResult served = Curl("POST", server_->url("/v1/chat/completions"), body.dump(),
                                 "-H 'Authorization: Bearer key-delta'");
  ASSERT_EQ(served.status, 200) << served.body;
  const json usage = json::parse(served.body)["usage"];
  EXPECT_EQ(usage["total_tokens"], 64) << "the whole minute, the output to its end";
  // The minute is spent: the next one waits, it is not refused for good.
  const HttpResult next = Curl("POST", server_->url("/v1/chat/completions"), body.dump(),
                               "-H 'Authorization: Bearer key-delta'");
  EXPECT_EQ(next.status, 429) << next.body;
}

TEST_F(ServeTenantsTest, SighupReloadsTenants) {
  std::ofstream(config_) << TenantsYaml({{"beta", "key-beta"}, {"gamma", "key-gamma"}}, "");
  kill(server_->pid(), SIGHUP);
  // The reload happens on the server's signal thread; wait until it took effect.
  for (int i = 0; i < 100 && server_->logs().find("SIGHUP: 2 tenants") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(Complete("key-gamma").status, 200);
  EXPECT_EQ(Complete("key-alpha").status, 401);
  // The reload dropped beta's rate limit.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Complete("key-beta").status, 200);
  // A broken file keeps the running tenants.
  std::ofstream(config_) << "tenants: [oops\n";
  kill(server_->pid(), SIGHUP);
  for (int i = 0;
       i < 100 && server_->logs().find("keeping the running tenants") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(server_->logs().find("keeping the running tenants"), std::string::npos);
  EXPECT_EQ(Complete("key-gamma").status, 200);
}

TEST_F(ServeTenantsTest, MetricsUnderLoadPassPromtool) {
  std::vector<std::thread> load;
  for (int i = 0; i < 4; ++i) {
    load.emplace_back([this] { Complete("key-alpha", 200); });
  }
  Complete("key-beta");
  Complete("key-beta");
  Complete("key-beta");  // refused: over the rate
  Complete("wrong");     // refused: unauthenticated
  const HttpResult scrape = Curl("GET", server_->url("/metrics"));
  for (auto& thread : load) thread.join();
  ASSERT_EQ(scrape.status, 200);
  EXPECT_EQ(scrape.headers.at("content-type").rfind("text/plain; version=0.0.4", 0), 0u);
  for (const char* name :
       {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
        "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total",
        "vllm:num_preemptions_total", "vllm:time_to_first_token_seconds_bucket",
        "vllm:inter_token_latency_seconds_bucket", "vllm:e2e_request_latency_seconds_bucket",
        "vllm:request_queue_time_seconds_bucket"}) {
    EXPECT_NE(scrape.body.find(name), std::string::npos) << name;
  }
  EXPECT_NE(scrape.body.find("kvd_tenant_rejections_total{model_name=\"kvd-tiny\",reason=\"rate_"
                             "limit\",tenant=\"beta\"} 1"),
            std::string::npos)
      << scrape.body;
  // promtool's only findings are on the names vLLM fixes (':' in names; a histogram named
  // *_total); anything else fails.
  std::ofstream(dir_ / "scrape.txt") << scrape.body;
  const std::string lint =
      Shell("promtool check metrics < " + (dir_ / "scrape.txt").string() + " 2>&1");
  std::istringstream lines(lint);
  std::string line;
  while (std::getline(lines, line)) {
    const bool expected = line.find("metric names should not contain ':'") != std::string::npos ||
                          line.find(
                              "vllm:iteration_tokens_total non-counter metrics should not "
                              "have \"_total\" suffix") != std::string::npos;
    EXPECT_TRUE(expected) << line;
  }
}

// A request queued behind a long one gets its 200 and SSE comment lines while it waits.
TEST(ServeKeepAliveTest, QueuedStreamGetsKeepAliveComments) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("kvd_keepalive_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.yaml") << "server:\n  keepalive_interval_seconds: 0.02\n"
                                        "scheduler:\n  max_num_seqs: 1\n";
  KvdServer server({"--model", kModel, "--config", (dir / "config.yaml").string()});
  ASSERT_GT(server.port(), 0) << server.logs();
  const json long_body = {
      {"model", "kvd-tiny"}, {"prompt", "the"}, {"max_tokens", 1500}, {"ignore_eos", true}};
  std::thread first([&] { Curl("POST", server.url("/v1/completions"), long_body.dump()); });
  // Wait until the long request runs, so the next one queues behind it.
  ASSERT_TRUE(WaitForGauge(server, "vllm:num_requests_running", 1));
  const json queued = {
      {"model", "kvd-tiny"}, {"prompt", "the"}, {"max_tokens", 2}, {"stream", true}};
  const HttpResult result = Curl("POST", server.url("/v1/completions"), queued.dump());
  first.join();
  EXPECT_EQ(result.status, 200);
  EXPECT_NE(result.body.find(": keep-alive\n\n"), std::string::npos) << result.body;
  EXPECT_NE(result.body.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(server.Stop(SIGTERM), 0);
  std::filesystem::remove_all(dir);
}

// A KV cache that holds fewer tokens of one sequence than the model's context is the longest
// sequence a request may ask for: advertised, the default max_tokens fitted to it, and a request
// past it refused rather than cut short.
TEST(ServeSmallCacheTest, TheCachesLongestSequenceIsTheModelLength) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("kvd_small_cache_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.yaml") << "scheduler:\n  kv_cache_bytes: 2MiB\n";
  KvdServer server({"--model", kModel, "--config", (dir / "config.yaml").string()});
  ASSERT_GT(server.port(), 0) << server.logs();
  const json models = json::parse(Curl("GET", server.url("/v1/models")).body);
  const int64_t longest = models["data"][0]["max_model_len"];
  EXPECT_LT(longest, 2048) << "the bundled model's context is 2048";
  EXPECT_GT(longest, 64);

  const json chat = {{"model", "kvd-tiny"},
                     {"temperature", 0},
                     {"ignore_eos", true},
                     {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  const HttpResult served = Curl("POST", server.url("/v1/chat/completions"), chat.dump());
  ASSERT_EQ(served.status, 200) << served.body;
  const json reply = json::parse(served.body);
  EXPECT_EQ(reply["usage"]["total_tokens"], longest) << "the default runs to the cache's end";
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "length");

  const HttpResult refused =
      Curl("POST", server.url("/v1/completions"),
           json{{"model", "kvd-tiny"}, {"prompt", "the"}, {"max_tokens", longest}}.dump());
  EXPECT_EQ(refused.status, 400) << refused.body;
  const json error = json::parse(refused.body)["error"];
  EXPECT_EQ(error["code"], "context_length_exceeded") << refused.body;
  EXPECT_EQ(error["param"], "prompt") << refused.body;
  EXPECT_EQ(server.Stop(SIGTERM), 0);
  std::filesystem::remove_all(dir);
}

// A full global queue answers 503 with Retry-After, more prompts than it holds 400; oversized
// headers 431; and with `logging.format: json` every log line is a JSON object.
TEST(ServeOverloadTest, FullQueueHugeHeadersAndJsonLogs) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("kvd_overload_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.yaml") << "scheduler:\n  max_num_seqs: 1\n  max_queued_requests: 1\n"
                                        "server:\n  max_header_bytes: 2KiB\n"
                                        "logging:\n  format: json\n";
  KvdServer server({"--model", kModel, "--config", (dir / "config.yaml").string()});
  ASSERT_GT(server.port(), 0) << server.logs();
  const json long_body = {
      {"model", "kvd-tiny"}, {"prompt", "the"}, {"max_tokens", 2000}, {"ignore_eos", true}};
  std::thread running([&] { Curl("POST", server.url("/v1/completions"), long_body.dump()); });
  // Once one request runs and one waits, the next finds the queue full.
  ASSERT_TRUE(WaitForGauge(server, "vllm:num_requests_running", 1));
  std::thread queued([&] { Curl("POST", server.url("/v1/completions"), long_body.dump()); });
  ASSERT_TRUE(WaitForGauge(server, "vllm:num_requests_waiting", 1));
  const HttpResult overloaded =
      Curl("POST", server.url("/v1/completions"),
           json{{"model", "kvd-tiny"}, {"prompt", "x"}, {"max_tokens", 1}}.dump());
  running.join();
  queued.join();
  EXPECT_EQ(overloaded.status, 503) << overloaded.body;
  EXPECT_EQ(json::parse(overloaded.body, nullptr, false)["error"]["type"],
            "service_unavailable_error");
  EXPECT_TRUE(overloaded.headers.count("retry-after"));
  // Two prompts wait as two requests: a queue of one never holds them, busy or idle, so that is
  // the client's error, not a reason to retry.
  const HttpResult too_many =
      Curl("POST", server.url("/v1/completions"),
           json{{"model", "kvd-tiny"}, {"prompt", {"a", "b"}}, {"max_tokens", 1}}.dump());
  EXPECT_EQ(too_many.status, 400) << too_many.body;
  EXPECT_EQ(json::parse(too_many.body, nullptr, false)["error"]["param"], "prompt");
  EXPECT_FALSE(too_many.headers.count("retry-after"));

  const HttpResult huge_header =
      Curl("GET", server.url("/v1/models"), "", "-H 'X-Padding: " + std::string(4096, 'p') + "'");
  EXPECT_EQ(huge_header.status, 431);

  EXPECT_EQ(server.Stop(SIGTERM), 0);
  std::istringstream lines(server.logs());
  std::string line;
  int parsed = 0;
  while (std::getline(lines, line)) {
    const json entry = json::parse(line, nullptr, false);
    ASSERT_TRUE(entry.is_object()) << line;
    EXPECT_TRUE(entry.contains("time") && entry.contains("level") && entry.contains("message"));
    ++parsed;
  }
  EXPECT_GT(parsed, 3);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kvd::testing
