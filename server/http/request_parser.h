// One HTTP/1.1 request from raw bytes under the server's limits: Beast's parser, the bounds it
// lacks (the whole head however it arrives, the chunked trailer, each line of chunk framing),
// and the conversion to an HttpRequest. Connections feed it from their sockets; the fuzz target
// feeds it directly, so both run the same code.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "server/http/http_message.h"

namespace kvd::server {

struct RequestLimits {
  // The request line and headers together; also the trailer of a chunked body and any one line
  // of chunk framing (over it: 431).
  size_t max_header_bytes = size_t{16} << 10;
  // The body's payload (over it: 413).
  size_t max_body_bytes = size_t{8} << 20;
};

class RequestParser {
 public:
  enum class Progress { kNeedMore, kDone, kFailed };
  // What a connection reads from its socket at a time.
  static constexpr size_t kReadBytes = size_t{8} << 10;

  explicit RequestParser(const RequestLimits& limits);
  ~RequestParser();
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  // `input` is every byte received and not yet consumed; `consumed` is set to how many of them
  // were used. Bytes left unconsumed must be offered again, with more appended, on the next call.
  // After kDone or kFailed nothing more may be put.
  Progress Put(std::string_view input, size_t& consumed);

  // Whether a byte of this request has arrived (an idle connection has none).
  bool started() const { return started_; }
  // Whether the client waits for an interim "100 Continue" before it sends the body: an HTTP/1.1
  // head with `Expect: 100-continue` is read and the body has not come. The connection sends it
  // once and calls ContinueSent.
  bool AwaitsContinue() const;
  void ContinueSent() { continue_sent_ = true; }
  // The largest input Put may be handed: what can stay unconsumed plus one read.
  static size_t MaxBufferedBytes(const RequestLimits& limits) {
    return limits.max_header_bytes + kReadBytes;
  }

  // After kFailed: the error reply (400, 413, 431 or 501); the connection closes after sending
  // it.
  const HttpResponse& error() const { return error_; }
  // After kDone: whether the client asked to keep the connection, whether it speaks HTTP/1.1
  // (an HTTP/1.0 client takes no chunked body), and the request itself.
  bool keep_alive() const { return keep_alive_; }
  bool http11() const { return http11_; }
  HttpRequest TakeRequest();

 private:
  struct Beast;
  Progress Fail(HttpResponse response);
  Progress Finish();

  const RequestLimits limits_;
  std::unique_ptr<Beast> beast_;
  bool started_ = false;
  bool continue_sent_ = false;
  size_t head_bytes_ = 0;  // consumed before the head was complete
  bool keep_alive_ = false;
  bool http11_ = false;
  HttpRequest request_;
  HttpResponse error_;
};

}  // namespace kvd::server
