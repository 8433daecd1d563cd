// `kvd serve` against hostile and unlucky clients, as raw bytes over a socket: heads, trailers
// and chunk lines past the limits, bodies past theirs sent whole before reading, JSON nested far
// too deep, duplicate credentials, slow senders, connection floods and descriptor exhaustion,
// bytes after a request, a reload that would drop authentication. After each, the server is still
// up and serving.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/integration/kvd_server_process.h"
#include "tests/integration/raw_http.h"
#include "tests/support/source_dir.h"

namespace kvd::testing {
namespace {

using json = nlohmann::json;

const std::string kModel = kvd::test_support::SourceDir() + "/models/kvd-tiny";

// A server on the bundled model with `yaml` as its config file.
class ConfiguredServer {
 public:
  explicit ConfiguredServer(const std::string& yaml) {
    static int counter = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("kvd_hardening_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
    config_ = dir_ / "config.yaml";
    std::ofstream(config_) << yaml;
    server_ = std::make_unique<KvdServer>(
        std::vector<std::string>{"--model", kModel, "--config", config_.string()});
  }
  ~ConfiguredServer() {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  KvdServer& server() { return *server_; }
  const std::filesystem::path& config() const { return config_; }

 private:
  std::filesystem::path dir_;
  std::filesystem::path config_;
  std::unique_ptr<KvdServer> server_;
};

// The server answers /health, at once or, when it is recovering (connections closing, descriptors
// coming back), within a few seconds.
void ExpectHealthy(KvdServer& server, bool recovering = false) {
  for (int i = 0; recovering && i < 40; ++i) {
    if (Curl("GET", server.url("/health")).status == 200) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(Curl("GET", server.url("/health")).status, 200) << server.logs();
}

// Sends `bytes` on a fresh connection and returns the response's status.
int SendRaw(const KvdServer& server, const std::string& bytes) {
  RawConnection connection(server.port());
  EXPECT_TRUE(connection.connected());
  connection.Send(bytes);
  return StatusOf(connection.ReadUntilClosed());
}

std::string Nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// The CPU seconds the process has used (user + system).
double CpuSeconds(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

TEST(ServeHardeningTest, HeadsTrailersAndChunkLinesPastTheLimitsAre431) {
  // The head limit raised past Beast's own 64 KiB per field.
  ConfiguredServer configured("server:\n  max_header_bytes: 1MiB\n");
  KvdServer& server = configured.server();
  ASSERT_GT(server.port(), 0) << server.logs();
  const std::string chunked =
      "POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
      "Content-Type: application/json\r\n\r\n";
  const std::string body = R"({"prompt":"hi"})";
  const std::string first_chunk = "f\r\n" + body + "\r\n";
  // A chunked body with a 2 MiB trailer, and one with a single 70 KiB trailer field.
  EXPECT_EQ(SendRaw(server, chunked + first_chunk + "0\r\nX-T: " + std::string(2 << 20, 't') +
                                "\r\n\r\n"),
            431);
  EXPECT_EQ(SendRaw(server, chunked + first_chunk + "0\r\nX-T: " + std::string(70 << 10, 't') +
                                "\r\n\r\n"),
            431);
  // A 2 MiB chunk extension.
  EXPECT_EQ(SendRaw(server, chunked + "f;" + std::string(2 << 20, 'e') + "\r\n"), 431);
  // A 70 KiB header field, and 2 MiB of empty header lines.
  EXPECT_EQ(SendRaw(server, JsonPost("/tokenize", body, "X-H: " + std::string(70 << 10, 'h') +
                                                            "\r\n")),
            431);
  std::string empty_lines;
  for (int i = 0; i < 500000; ++i) empty_lines += "X:\r\n";
  EXPECT_EQ(SendRaw(server, JsonPost("/tokenize", body, empty_lines)), 431);
  // A small trailer is fine.
  EXPECT_EQ(SendRaw(server, chunked + first_chunk + "0\r\nX-T: 1\r\nConnection: close\r\n\r\n"),
            200);
  ExpectHealthy(server);
}

// A client that writes its whole body before reading (Python's http.client, many proxies) reads
// the 413 too: the server keeps taking and dropping the body after its reply instead of closing
// on the unread bytes, which would reset the connection under the client's writes.
TEST(ServeHardeningTest, ABodyOverTheLimitIs413ToAClientThatSendsItAllBeforeReading) {
  ConfiguredServer configured("server:\n  max_body_bytes: \"64KiB\"\n");
  KvdServer& server = configured.server();
  ASSERT_GT(server.port(), 0) << server.logs();
  const std::string body(10 << 20, 'x');
  const std::string declared =
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n";
  std::string chunked =
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string chunk(1 << 20, 'x');
  for (int i = 0; i < 10; ++i) chunked += "100000\r\n" + chunk + "\r\n";
  chunked += "0\r\n\r\n";
  for (const std::string& request : {declared + body, chunked}) {
    RawConnection connection(server.port());
    ASSERT_TRUE(connection.connected());
    EXPECT_TRUE(connection.Send(request)) << "the server reset the connection under the body";
    const std::string response = connection.ReadUntil("}}");
    EXPECT_EQ(StatusOf(response), 413) << response;
    EXPECT_NE(response.find("request_too_large"), std::string::npos) << response;
  }
  ExpectHealthy(server);
}

TEST(ServeHardeningTest, JsonNestedTooDeepIs400Everywhere) {
  ConfiguredServer configured("");
  KvdServer& server = configured.server();
  ASSERT_GT(server.port(), 0) << server.logs();
  const std::string deep = Nested(100000);
  const std::string user = R"({"role": "user", "content": )";
  const struct {
    std::string path;
    std::string body;
  } cases[] = {
      {"/v1/chat/completions", R"({"model": "kvd-tiny", "messages": [)" + user + deep + "}]}"},
      {"/v1/chat/completions",
       R"({"model": "kvd-tiny", "messages": [{"role": "user", "content": "hi", "x": )" + deep +
           "}]}"},
      {"/v1/chat/completions", R"({"model": "kvd-tiny", "messages": [{"role": "user", "content":)"
                               R"( "hi"}], "chat_template_kwargs": {"a": )" +
                                   deep + "}}"},
      {"/tokenize", R"({"model": "kvd-tiny", "messages": [)" + user + deep + "}]}"},
      {"/v1/completions", R"({"model": "kvd-tiny", "prompt": )" + deep + "}"},
      {"/v1/documents", R"({"text": "zix: WEK", "metadata": {"a": )" + deep + "}}"},
  };
  for (const auto& c : cases) {
    const HttpResult result = Curl("POST", server.url(c.path), c.body);
    EXPECT_EQ(result.status, 400) << c.path << ": " << result.body;
    EXPECT_NE(result.body.find("deeper than"), std::string::npos) << result.body;
  }
  ExpectHealthy(server);
}

TEST(ServeHardeningTest, BadShapesAre400NotInternalErrors) {
  ConfiguredServer configured("");
  KvdServer& server = configured.server();
  ASSERT_GT(server.port(), 0) << server.logs();
  const std::string parts =
      R"({"model": "kvd-tiny", "messages": [{"role": "user", "content": [{"type": 5}]}]})";
  EXPECT_EQ(Curl("POST", server.url("/v1/chat/completions"), parts).status, 400);
  const std::string format = R"({"model": "kvd-tiny", "messages": [{"role": "user", "content":)"
                             R"( "hi"}], "response_format": {"type": [1]}})";
  EXPECT_EQ(Curl("POST", server.url("/v1/chat/completions"), format).status, 400);
  // Two Authorization headers: which one counts would depend on who reads them.
  EXPECT_EQ(SendRaw(server, JsonPost("/tokenize", R"({"prompt":"hi"})",
                                     "Authorization: Bearer a\r\nAuthorization: Bearer b\r\n")),
            400);
}

TEST(ServeHardeningTest, ASlowSenderGets408AtTheReadTimeout) {
  ConfiguredServer configured("server:\n  read_timeout_seconds: 1\n  idle_timeout_seconds: 600\n");
  KvdServer& server = configured.server();
  ASSERT_GT(server.port(), 0) << server.logs();
  RawConnection slow(server.port());
  ASSERT_TRUE(slow.connected());
  // A byte every 100 ms: each read makes progress, the request never completes.
  std::atomic<bool> stop = false;
  std::thread trickle([&] {
    const std::string head = "POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    for (size_t i = 0; !stop && slow.Send(i < head.size() ? head.substr(i, 1) : "s"); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  const std::string response = slow.ReadUntilClosed();  // gives up after 20 s
  stop = true;
  trickle.join();
  EXPECT_EQ(StatusOf(response), 408) << response;
  ExpectHealthy(server);
}

TEST(ServeHardeningTest, ConnectionsOverTheLimitsGet503AndTheServerKeepsServing) {
  ConfiguredServer configured("server:\n  max_connections: 8\n  max_connections_per_client: 4\n");
  KvdServer& server = configured.server();
  ASSERT_GT(server.port(), 0) << server.logs();
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(std::make_unique<RawConnection>(server.port()));
    ASSERT_TRUE(idle.back()->connected());
  }
  // The fifth from the same address is turned away at once, with Retry-After.
  RawConnection fifth(server.port());
  const std::string response = fifth.ReadUntilClosed();
  EXPECT_EQ(StatusOf(response), 503) << response;
  EXPECT_NE(response.find("Retry-After: 1"), std::string::npos) << response;
  EXPECT_NE(response.find("too_many_connections"), std::string::npos) << response;
  idle.clear();
  // Closed connections free their slots.
  ExpectHealthy(server, /*recovering=*/true);
}

TEST(ServeHardeningTest, RunningOutOfDescriptorsNeitherSpinsNorFloodsTheLog) {
  ConfiguredServer configured("");
  KvdServer& server = configured.server();
  ASSERT_GT(server.port(), 0) << server.logs();
  // A connection the client closes first, while descriptors are plenty: UBSan (in the sanitizer
  // build) checks the type of the end-of-stream error's category once and caches the result,
  // and the check itself needs descriptors it would not get below.
  { RawConnection closed_at_once(server.port()); }
  ExpectHealthy(server);
  // Leave the running server few descriptors beyond what it holds.
  size_t open_now = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(
           "/proc/" + std::to_string(server.pid()) + "/fd")) {
    ++open_now;
  }
  const std::string pid = std::to_string(server.pid());
  std::string soft = Shell("prlimit --pid " + pid + " --nofile --raw --noheadings -o SOFT");
  while (!soft.empty() && (soft.back() == '\n' || soft.back() == ' ')) soft.pop_back();
  ASSERT_FALSE(soft.empty());
  ASSERT_EQ(Shell("prlimit --pid " + pid + " --nofile=" + std::to_string(open_now + 8) +
                  ": && echo ok"),
            "ok\n");
  std::vector<std::unique_ptr<RawConnection>> flood;
  for (int i = 0; i < 40; ++i) flood.push_back(std::make_unique<RawConnection>(server.port()));
  const double cpu_before = CpuSeconds(server.pid());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double cpu_used = CpuSeconds(server.pid()) - cpu_before;
  // Accepting in a loop that fails at once would use the whole 2 s of a core.
  EXPECT_LT(cpu_used, 1.0);
  EXPECT_LE(Count(server.logs(), "accept: "), 3u) << server.logs().substr(0, 2000);
  flood.clear();
  Shell("prlimit --pid " + pid + " --nofile=" + soft + ":");
  ExpectHealthy(server, /*recovering=*/true);
}

TEST(ServeHardeningTest, AClientThatSendsAByteMoreAndLeavesIsCancelled) {
  ConfiguredServer configured("");
  KvdServer& server = configured.server();
  ASSERT_GT(server.port(), 0) << server.logs();
  const json body = {{"model", "kvd-tiny"}, {"prompt", "the"},       {"max_tokens", 2000},
                     {"n", 8},              {"ignore_eos", true}};
  {
    RawConnection connection(server.port());
    ASSERT_TRUE(connection.connected());
    // The request, one byte of a next request, and gone.
    ASSERT_TRUE(connection.Send(JsonPost("/v1/completions", body.dump()) + "G"));
  }
  for (int i = 0; i < 200 && server.logs().find("status=") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(server.logs().find("status=499"), std::string::npos) << server.logs();
}

// A client that asks `Expect: 100-continue` (curl, for bodies over 1 MiB) gets the interim reply
// to its head, and the answer once its body follows, instead of waiting out its own timeout.
TEST(ServeHardeningTest, AHeadThatExpectsContinueGetsIt) {
  ConfiguredServer configured("");
  KvdServer& server = configured.server();
  ASSERT_GT(server.port(), 0) << server.logs();
  const std::string body = json{{"model", "kvd-tiny"}, {"prompt", "the"}, {"max_tokens", 2}}.dump();
  const std::string request =
      JsonPost("/v1/completions", body, "Expect: 100-continue\r\nConnection: close\r\n");
  RawConnection connection(server.port(), /*read_timeout_seconds=*/5);
  ASSERT_TRUE(connection.connected());
  ASSERT_TRUE(connection.Send(request.substr(0, request.size() - body.size())));
  EXPECT_EQ(connection.ReadUntil("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(connection.Send(body));
  const std::string response = connection.ReadUntilClosed();
  EXPECT_EQ(StatusOf(response), 200) << response;
  EXPECT_NE(response.find("\"text_completion\""), std::string::npos) << response;
}

// An HTTP/1.0 client takes no chunked body: a stream comes as it is and ends with the
// connection; an HTTP/1.1 client's comes in chunks.
TEST(ServeHardeningTest, AStreamToAnHttp10ClientIsUnframedAndEndsWithTheConnection) {
  ConfiguredServer configured("");
  KvdServer& server = configured.server();
  ASSERT_GT(server.port(), 0) << server.logs();
  const std::string body =
      json{{"model", "kvd-tiny"}, {"prompt", "the"}, {"max_tokens", 3}, {"stream", true}}.dump();
  for (const std::string version : {"HTTP/1.0", "HTTP/1.1"}) {
    SCOPED_TRACE(version);
    std::string request = JsonPost("/v1/completions", body, "Connection: close\r\n");
    request.replace(request.find("HTTP/1.1"), 8, version);
    RawConnection connection(server.port());
    ASSERT_TRUE(connection.connected());
    ASSERT_TRUE(connection.Send(request));
    const std::string response = connection.ReadUntilClosed();
    const size_t head_end = response.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos) << response;
    const std::string head = response.substr(0, head_end);
    const std::string events = response.substr(head_end + 4);
    EXPECT_EQ(StatusOf(response), 200) << response;
    const bool chunked = head.find("Transfer-Encoding: chunked") != std::string::npos;
    EXPECT_EQ(chunked, version == "HTTP/1.1") << head;
    EXPECT_NE(events.find("data: [DONE]"), std::string::npos) << events;
    if (!chunked) {
      EXPECT_EQ(events.rfind("data: ", 0), 0u) << "no chunk sizes: " << events;
    }
  }
}

TEST(ServeHardeningTest, AReloadKeepsAuthenticationUnlessTheFileDisablesIt) {
  const std::string tenants = "tenants:\n  - id: alpha\n    key_sha256: [\"" +
                              Digest("key-alpha") + "\"]\n";
  ConfiguredServer configured(tenants);
  KvdServer& server = configured.server();
  ASSERT_GT(server.port(), 0) << server.logs();
  const auto models = [&] { return Curl("GET", server.url("/v1/models")).status; };
  ASSERT_EQ(models(), 401);
  const auto reload = [&](const std::string& yaml, const std::string& expect_in_log) {
    std::ofstream(configured.config()) << yaml;
    const size_t count = Count(server.logs(), expect_in_log);
    kill(server.pid(), SIGHUP);
    for (int i = 0; i < 200 && Count(server.logs(), expect_in_log) == count; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    EXPECT_GT(Count(server.logs(), expect_in_log), count) << server.logs();
  };
  // An empty file and an empty list are refused: the tenants stay.
  reload("", "keeping the running tenants");
  EXPECT_EQ(models(), 401);
  reload("tenants: []\n", "keeping the running tenants");
  EXPECT_EQ(models(), 401);
  // Saying so turns it off.
  reload("auth: disabled\n", "authentication is off");
  EXPECT_EQ(models(), 200);
  // And a file with tenants turns it back on.
  reload(tenants, "1 tenants loaded");
  EXPECT_EQ(models(), 401);
}

// Many idle and slow connections beside normal traffic: normal requests are still answered.
TEST(ServeHardeningTest, IdleAndSlowConnectionsDoNotStarveNormalRequests) {
  ConfiguredServer configured("server:\n  max_connections_per_client: 0\n");
  KvdServer& server = configured.server();
  ASSERT_GT(server.port(), 0) << server.logs();
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 300; ++i) {
    idle.push_back(std::make_unique<RawConnection>(server.port()));
    ASSERT_TRUE(idle.back()->connected());
  }
  // Half of them send a partial head and stall.
  for (size_t i = 0; i < idle.size(); i += 2) idle[i]->Send("POST /v1/completions HTTP/1.1\r\n");
  const json request = {{"model", "kvd-tiny"}, {"prompt", "the"}, {"max_tokens", 8}};
  for (int i = 0; i < 20; ++i) {
    const HttpResult result = Curl("POST", server.url("/v1/completions"), request.dump(),
                                   "--max-time 10");
    ASSERT_EQ(result.status, 200) << result.body;
  }
}

}  // namespace
}  // namespace kvd::testing
