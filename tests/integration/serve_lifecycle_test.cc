// `kvd serve`'s shutdown: SIGTERM turns /ready and new requests to 503 while replies in flight
// finish, then the document store closes cleanly and reopens with everything in it; a second
// SIGTERM stops at once.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "nlohmann/json.hpp"
#include "tests/integration/kvd_server_process.h"
#include "tests/support/source_dir.h"

namespace kvd::testing {
namespace {

using json = nlohmann::json;

const std::string kModel = kvd::test_support::SourceDir() + "/models/kvd-tiny";

const json kLongStream = {{"model", "kvd-tiny"},
                          {"prompt", "the"},
                          {"max_tokens", 2000},
                          {"ignore_eos", true},
                          {"stream", true}};

bool WaitForRunning(const KvdServer& server) {
  const std::string line = "vllm:num_requests_running{model_name=\"kvd-tiny\",engine=\"0\"} 1\n";
  for (int i = 0; i < 500; ++i) {
    if (Curl("GET", server.url("/metrics")).body.find(line) != std::string::npos) return true;
  }
  return false;
}

TEST(ServeLifecycleTest, SigtermDrainsStreamsInFlight) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kvd_lifecycle_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::filesystem::path data = dir / "data";
  const std::filesystem::path config = dir / "config.yaml";
  // The drain waits for the stream however slow the build (sanitizers) or the machine.
  std::ofstream(config) << "server:\n  drain_timeout_seconds: 600\n";
  KvdServer server({"--model", kModel, "--config", config.string(), "--data-dir", data.string()});
  ASSERT_GT(server.port(), 0) << server.logs();
  EXPECT_EQ(Curl("GET", server.url("/ready")).status, 200);
  const HttpResult uploaded =
      Curl("POST", server.url("/v1/documents"),
           json{{"text", "zix: WEK\nvig: KSOHB\nthe old river finds a lamp."}}.dump());
  ASSERT_EQ(uploaded.status, 201) << uploaded.body;
  const std::string id = json::parse(uploaded.body)["id"];
  HttpResult stream;
  std::thread client(
      [&] { stream = Curl("POST", server.url("/v1/completions"), kLongStream.dump()); });
  ASSERT_TRUE(WaitForRunning(server));
  kill(server.pid(), SIGTERM);
  for (int i = 0; i < 100 && server.logs().find("draining") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const HttpResult ready = Curl("GET", server.url("/ready"));
  const HttpResult refused =
      Curl("POST", server.url("/v1/completions"),
           json{{"model", "kvd-tiny"}, {"prompt", "x"}, {"max_tokens", 1}}.dump());
  client.join();
  EXPECT_EQ(server.Stop(SIGTERM), 0) << server.logs();
  // Either the drain was still on when these arrived (503), or the server had already closed.
  if (ready.status != 0) {
    EXPECT_EQ(ready.status, 503);
    EXPECT_EQ(refused.status, 503);
    EXPECT_EQ(json::parse(refused.body, nullptr, false)["error"]["type"],
              "service_unavailable_error");
  }
  EXPECT_EQ(stream.status, 200);
  EXPECT_NE(stream.body.find("\"finish_reason\":\"length\""), std::string::npos);
  EXPECT_NE(stream.body.find("data: [DONE]"), std::string::npos) << "the stream was cut";
  EXPECT_NE(server.logs().find("drained; 0 replies cut off"), std::string::npos) << server.logs();

  // The store was flushed and closed: it reopens, and the document answers as before.
  KvdServer reopened({"--model", kModel, "--data-dir", data.string()});
  ASSERT_GT(reopened.port(), 0) << reopened.logs();
  const HttpResult got = Curl("GET", reopened.url("/v1/documents/" + id));
  EXPECT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(json::parse(got.body, nullptr, false)["status"], "ready");
  const HttpResult asked =
      Curl("POST", reopened.url("/v1/chat/completions"),
           json{{"model", "kvd-tiny"},
                {"messages", json::array({{{"role", "user"}, {"content", "Q:vig"}}})},
                {"documents", json::array({id})},
                {"temperature", 0}}
               .dump());
  ASSERT_EQ(asked.status, 200) << asked.body;
  EXPECT_EQ(json::parse(asked.body)["choices"][0]["message"]["content"], "KSOHB");
  EXPECT_EQ(reopened.Stop(SIGTERM), 0) << reopened.logs();
  std::filesystem::remove_all(dir);
}

TEST(ServeLifecycleTest, SecondSigtermStopsAtOnce) {
  KvdServer server({"--model", kModel});
  ASSERT_GT(server.port(), 0) << server.logs();
  std::thread client([&] { Curl("POST", server.url("/v1/completions"), kLongStream.dump()); });
  ASSERT_TRUE(WaitForRunning(server));
  kill(server.pid(), SIGTERM);
  for (int i = 0; i < 100 && server.logs().find("draining") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server.Stop(SIGTERM), 0) << server.logs();
  client.join();
  const std::string logs = server.logs();
  EXPECT_TRUE(logs.find("second signal") != std::string::npos ||
              logs.find("drained; 0 replies cut off") != std::string::npos)
      << logs;
}

}  // namespace
}  // namespace kvd::testing
