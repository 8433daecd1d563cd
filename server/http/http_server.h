// The HTTP/1.1 server (Boost.Beast on Asio, C++20 coroutines): keep-alive connections on N I/O
// threads, connection limits, header and body size limits (RequestParser), timeouts, and replies
// that stream (SSE) or arrive later without blocking an I/O thread. Routing and everything above it is the Router's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/http/request_parser.h"
#include "server/http/router.h"

namespace kvd::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port (see HttpServer::port)
  int32_t io_threads = 2;
  RequestLimits limits;
  int64_t max_connections = 1024;            // open at once; more are answered 503; 0: no limit
  int64_t max_connections_per_client = 256;  // from one address; 0: no limit
  absl::Duration read_timeout = absl::Seconds(30);        // one request, from its first byte
  absl::Duration idle_timeout = absl::Seconds(75);        // waiting for the next request
  absl::Duration write_timeout = absl::Seconds(30);       // writing one response or chunk
  absl::Duration keepalive_interval = absl::Seconds(15);  // SSE comment when idle; 0: none
};

class HttpServer {
 public:
  // Binds and listens; `router` is borrowed and must outlive the server.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HttpServer>> Create(
      const HttpServerOptions& options, const Router& router);
  ~HttpServer();  // Stop()

  uint16_t port() const;
  // Starts accepting on the I/O threads.
  void Start();
  // Stops accepting, ends every connection, joins the I/O threads.
  void Stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvd::server
