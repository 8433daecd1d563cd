// RequestParser: whole requests in any fragmentation, and every limit it enforces (the head
// however it arrives, many empty header lines, chunked trailers and chunk lines, fields over
// Beast's own 64 KiB, bodies, duplicate singleton headers).
#include "server/http/request_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace kvd::server {
namespace {

using Progress = RequestParser::Progress;

struct Outcome {
  Progress progress = Progress::kNeedMore;
  HttpRequest request;
  HttpResponse error;
  bool keep_alive = false;
  size_t left = 0;  // bytes after the request, unconsumed
};

// Feeds `bytes` as a connection would, `step` bytes per read, keeping what is unconsumed.
Outcome Feed(const std::string& bytes, size_t step, RequestLimits limits = {}) {
  RequestParser parser(limits);
  std::string buffer;
  Outcome outcome;
  size_t offset = 0;
  while (true) {
    const size_t take = std::min(step, bytes.size() - offset);
    buffer.append(bytes, offset, take);
    offset += take;
    EXPECT_LE(buffer.size(), RequestParser::MaxBufferedBytes(limits));
    size_t consumed = 0;
    outcome.progress = parser.Put(buffer, consumed);
    buffer.erase(0, consumed);
    if (outcome.progress != Progress::kNeedMore || offset == bytes.size()) break;
  }
  if (outcome.progress == Progress::kDone) {
    outcome.request = parser.TakeRequest();
    outcome.keep_alive = parser.keep_alive();
  } else if (outcome.progress == Progress::kFailed) {
    outcome.error = parser.error();
  }
  outcome.left = buffer.size() + bytes.size() - offset;
  return outcome;
}

std::string ToHex(size_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  do {
    hex.insert(hex.begin(), kDigits[value % 16]);
    value /= 16;
  } while (value > 0);
  return hex;
}

std::string Post(const std::string& extra_headers, const std::string& body) {
  return "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n" +
         extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string Chunked(const std::string& body, const std::string& trailer) {
  return "POST /tokenize HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" +
         (body.empty() ? std::string() : ToHex(body.size()) + "\r\n" + body + "\r\n") + "0\r\n" +
         trailer + "\r\n";
}

TEST(RequestParserTest, ParsesAWholeRequestInAnyFragmentation) {
  const std::string bytes = Post("X-Tag: one\r\n", R"({"prompt":"hi"})") + "GET /health";
  for (size_t step : {size_t{1}, size_t{7}, size_t{100}, bytes.size()}) {
    const Outcome outcome = Feed(bytes, step);
    ASSERT_EQ(outcome.progress, Progress::kDone) << step;
    EXPECT_EQ(outcome.request.method, "POST");
    EXPECT_EQ(outcome.request.path, "/v1/completions");
    EXPECT_EQ(outcome.request.query, "x=1");
    EXPECT_EQ(outcome.request.header("x-tag"), "one");
    EXPECT_EQ(outcome.request.body, R"({"prompt":"hi"})");
    EXPECT_TRUE(outcome.keep_alive);
    EXPECT_EQ(outcome.left, std::string("GET /health").size()) << "the pipelined bytes stay";
  }
}

TEST(RequestParserTest, AHeadOverTheLimitIs431HoweverItArrives) {
  const std::string big(20 << 10, 'a');
  for (size_t step : {size_t{1} << 10, size_t{64} << 10}) {
    const Outcome outcome = Feed(Post("X-Big: " + big + "\r\n", ""), step);
    ASSERT_EQ(outcome.progress, Progress::kFailed) << step;
    EXPECT_EQ(outcome.error.status, 431);
  }
}

TEST(RequestParserTest, ManyEmptyHeaderLinesCountAgainstTheHeadLimit) {
  std::string lines;
  for (int i = 0; i < 100000; ++i) lines += "X:\r\n";
  for (size_t step : {size_t{3}, size_t{4096}}) {
    const Outcome outcome = Feed(Post(lines, ""), step);
    ASSERT_EQ(outcome.progress, Progress::kFailed) << step;
    EXPECT_EQ(outcome.error.status, 431);
  }
}

TEST(RequestParserTest, AChunkedTrailerOverTheHeadLimitIs431) {
  const Outcome small = Feed(Chunked("{}", "X-Sum: 1\r\n"), 512);
  ASSERT_EQ(small.progress, Progress::kDone);
  EXPECT_EQ(small.request.body, "{}");
  for (size_t size : {size_t{20} << 10, size_t{70} << 10, size_t{1} << 20}) {
    const Outcome outcome = Feed(Chunked("{}", "X-Sum: " + std::string(size, 'b') + "\r\n"), 8192);
    ASSERT_EQ(outcome.progress, Progress::kFailed) << size;
    EXPECT_EQ(outcome.error.status, 431);
  }
}

TEST(RequestParserTest, ManySmallChunksAreFine) {
  std::string bytes = "POST /tokenize HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 20000; ++i) bytes += "1\r\nx\r\n";
  bytes += "0\r\n\r\n";
  const Outcome outcome = Feed(bytes, 8192);
  ASSERT_EQ(outcome.progress, Progress::kDone);
  EXPECT_EQ(outcome.request.body, std::string(20000, 'x'));
}

TEST(RequestParserTest, ALongChunkLineIs431) {
  const std::string bytes = "POST /tokenize HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2;" +
                            std::string(100 << 10, 'e');
  const Outcome outcome = Feed(bytes, 8192);
  ASSERT_EQ(outcome.progress, Progress::kFailed);
  EXPECT_EQ(outcome.error.status, 431);
}

TEST(RequestParserTest, AFieldOverBeastsOwnLimitIs431WhenTheHeadLimitIsRaised) {
  const RequestLimits raised{.max_header_bytes = size_t{1} << 20};
  const Outcome header = Feed(Post("X-Big: " + std::string(70 << 10, 'c') + "\r\n", ""), 8192,
                              raised);
  ASSERT_EQ(header.progress, Progress::kFailed);
  EXPECT_EQ(header.error.status, 431);
  const Outcome trailer =
      Feed(Chunked("{}", "X-Big: " + std::string(70 << 10, 'c') + "\r\n"), 8192, raised);
  ASSERT_EQ(trailer.progress, Progress::kFailed);
  EXPECT_EQ(trailer.error.status, 431);
}

TEST(RequestParserTest, ABodyOverTheLimitIs413) {
  const RequestLimits limits{.max_body_bytes = 100};
  EXPECT_EQ(Feed(Post("", std::string(101, 'x')), 64, limits).error.status, 413);
  EXPECT_EQ(Feed(Chunked(std::string(101, 'x'), ""), 64, limits).error.status, 413);
  EXPECT_EQ(Feed(Post("", std::string(100, 'x')), 64, limits).progress, Progress::kDone);
}

TEST(RequestParserTest, ASecondAuthorizationHeaderIs400) {
  const Outcome outcome =
      Feed(Post("Authorization: Bearer a\r\nAuthorization: Bearer b\r\n", "{}"), 4096);
  ASSERT_EQ(outcome.progress, Progress::kFailed);
  EXPECT_EQ(outcome.error.status, 400);
  EXPECT_NE(outcome.error.body.find("more than one Authorization header"), std::string::npos);
}

TEST(RequestParserTest, RepeatedListHeadersJoinWithCommas) {
  const Outcome outcome = Feed(Post("Accept: a\r\nAccept: b\r\n", "{}"), 4096);
  ASSERT_EQ(outcome.progress, Progress::kDone);
  EXPECT_EQ(outcome.request.header("accept"), "a, b");
}

TEST(RequestParserTest, GarbageIs400) {
  const Outcome outcome = Feed("\x01\x02 nonsense\r\n\r\n", 4096);
  ASSERT_EQ(outcome.progress, Progress::kFailed);
  EXPECT_EQ(outcome.error.status, 400);
}

// A client that sends `Expect: 100-continue` waits for the interim reply once its head is read;
// one that sent its body with the head, or speaks HTTP/1.0, waits for nothing.
TEST(RequestParserTest, AnHttp11HeadThatExpectsContinueAwaitsItUntilTheBodyComes) {
  const std::string body = "{\"a\": 1}";
  const std::string head =
      "POST /v1/documents HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n";
  RequestParser parser({});
  size_t consumed = 0;
  EXPECT_FALSE(parser.AwaitsContinue());
  ASSERT_EQ(parser.Put(head, consumed), Progress::kNeedMore);
  EXPECT_EQ(consumed, head.size());
  EXPECT_TRUE(parser.AwaitsContinue());
  parser.ContinueSent();
  EXPECT_FALSE(parser.AwaitsContinue());
  ASSERT_EQ(parser.Put(body, consumed), Progress::kDone);
  EXPECT_EQ(parser.TakeRequest().body, body);

  RequestParser whole({});
  EXPECT_EQ(whole.Put(head + body, consumed), Progress::kDone);
  EXPECT_FALSE(whole.AwaitsContinue());

  RequestParser old({});
  std::string old_head = head;
  old_head.replace(old_head.find("HTTP/1.1"), 8, "HTTP/1.0");
  ASSERT_EQ(old.Put(old_head, consumed), Progress::kNeedMore);
  EXPECT_FALSE(old.AwaitsContinue());

  RequestParser plain({});
  ASSERT_EQ(plain.Put(Post("", body).substr(0, Post("", body).size() - body.size()), consumed),
            Progress::kNeedMore);
  EXPECT_FALSE(plain.AwaitsContinue());
}

// HTTP/1.1 requires a Host header (HTTP/1.0 has none), and a transfer coding other than chunked
// is not read as if it were plain: 501.
TEST(RequestParserTest, Http11WithoutHostIs400AndAnUnknownTransferCodingIs501) {
  const Outcome no_host = Feed("GET /v1/models HTTP/1.1\r\n\r\n", 64);
  EXPECT_EQ(no_host.progress, Progress::kFailed);
  EXPECT_EQ(no_host.error.status, 400);
  EXPECT_NE(no_host.error.body.find("Host"), std::string::npos) << no_host.error.body;
  EXPECT_EQ(Feed("GET /v1/models HTTP/1.0\r\n\r\n", 64).progress, Progress::kDone);

  const std::string gzip =
      "POST /tokenize HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
      "2\r\n{}\r\n0\r\n\r\n";
  const Outcome coded = Feed(gzip, 64);
  EXPECT_EQ(coded.progress, Progress::kFailed);
  EXPECT_EQ(coded.error.status, 501);
  EXPECT_NE(coded.error.body.find("gzip"), std::string::npos) << coded.error.body;
  EXPECT_EQ(Feed(Chunked("{}", ""), 64).progress, Progress::kDone);
}

}  // namespace
}  // namespace kvd::server
