#include "server/http/http_server.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <thread>
#include <utility>  // before Asio: Boost 1.74 with g++ 12 needs std::exchange declared first
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/http/error_response.h"
#include "server/version.h"
#include "spdlog/spdlog.h"

namespace kvd::server {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using net::awaitable;
using net::use_awaitable;

std::chrono::steady_clock::duration Chrono(absl::Duration duration) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      absl::ToChronoNanoseconds(duration));
}

// What a waiting reply and the connection's watcher share; touched only on the session's strand.
struct WaitState {
  explicit WaitState(const net::any_io_executor& executor) : timer(executor) {}
  net::steady_timer timer;
  bool notified = false;     // the reply may have progress
  bool client_gone = false;  // the peer closed or reset the connection
  bool watching = false;     // the watcher's read is outstanding
};

class Session {
 public:
  Session(tcp::socket socket, const HttpServerOptions& options, const Router& router)
      : stream_(std::move(socket)), options_(options), router_(router) {}

  awaitable<void> Run() {
    bool keep_alive = true;
    while (keep_alive) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(options_.max_header_bytes));
      parser.body_limit(options_.max_body_bytes);
      stream_.expires_after(Chrono(options_.idle_timeout));
      beast::error_code ec;
      co_await http::async_read(stream_, buffer_, parser, net::redirect_error(use_awaitable, ec));
      if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
          ec == net::error::connection_reset || ec == net::error::eof) {
        break;
      }
      if (ec) {
        co_await WriteResponse(ParseErrorResponse(ec), /*keep_alive=*/false);
        break;
      }
      http::request<http::string_body> message = parser.release();
      keep_alive = message.keep_alive();
      HttpRequest request = ToRequest(message);
      HandlerResult result = Dispatch(request);
      if (auto* response = std::get_if<HttpResponse>(&result)) {
        if (!co_await WriteResponse(*response, keep_alive)) break;
      } else {
        keep_alive =
            co_await RunAsyncReply(*std::get<std::unique_ptr<AsyncReply>>(result), keep_alive) &&
            keep_alive;
      }
    }
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

 private:
  static HttpResponse ParseErrorResponse(const beast::error_code& ec) {
    if (ec == http::error::body_limit) {
      return ErrorResponse(
          WithErrorCode(absl::InvalidArgumentError("the request body exceeds the server's limit"),
                        "request_too_large"));
    }
    if (ec == http::error::header_limit) {
      HttpResponse response = ErrorResponse(
          absl::InvalidArgumentError("the request headers exceed the server's limit"));
      response.status = 431;
      return response;
    }
    return ErrorResponse(
        absl::InvalidArgumentError(absl::StrCat("malformed HTTP request: ", ec.message())));
  }

  static HttpRequest ToRequest(const http::request<http::string_body>& message) {
    HttpRequest request;
    request.method = std::string(message.method_string());
    const std::string target(message.target());
    const size_t question = target.find('?');
    request.path = target.substr(0, question);
    if (question != std::string::npos) request.query = target.substr(question + 1);
    for (const auto& field : message) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      request.headers[name] = std::string(field.value());
    }
    request.body = message.body();
    return request;
  }

  HandlerResult Dispatch(HttpRequest& request) {
    try {
      return router_.Dispatch(request);
    } catch (const std::exception& e) {
      spdlog::error("handler for {} {} threw: {}", request.method, request.path, e.what());
    } catch (...) {
      spdlog::error("handler for {} {} threw", request.method, request.path);
    }
    return ErrorResponse(absl::InternalError("internal error"));
  }

  void SetCommonFields(http::fields& fields) {
    fields.set(http::field::server, absl::StrCat("kvd/", kVersion));
  }

  awaitable<bool> WriteResponse(const HttpResponse& response, bool keep_alive) {
    http::response<http::string_body> message{static_cast<http::status>(response.status), 11};
    SetCommonFields(message.base());
    message.set(http::field::content_type, response.content_type);
    for (const auto& [name, value] : response.headers) message.set(name, value);
    message.keep_alive(keep_alive);
    message.body() = response.body;
    message.prepare_payload();
    stream_.expires_after(Chrono(options_.write_timeout));
    beast::error_code ec;
    co_await http::async_write(stream_, message, net::redirect_error(use_awaitable, ec));
    co_return !ec;
  }

  awaitable<bool> WriteChunk(std::string_view data) {
    stream_.expires_after(Chrono(options_.write_timeout));
    beast::error_code ec;
    co_await net::async_write(stream_, http::make_chunk(net::buffer(data.data(), data.size())),
                              net::redirect_error(use_awaitable, ec));
    co_return !ec;
  }

  // Reads from the socket while a reply is pending: an end of stream or a reset means the client
  // went away. A byte of a pipelined next request is kept for the next read.
  awaitable<void> WatchPeer(std::shared_ptr<WaitState> state) {
    char byte = 0;
    beast::error_code ec;
    const size_t read = co_await stream_.socket().async_read_some(
        net::buffer(&byte, 1), net::redirect_error(use_awaitable, ec));
    if (!ec && read == 1) {
      auto space = buffer_.prepare(1);
      *static_cast<char*>(space.data()) = byte;
      buffer_.commit(1);
    } else if (ec != net::error::operation_aborted) {
      state->client_gone = true;
    }
    state->watching = false;
    state->notified = true;
    state->timer.cancel();
  }

  // Returns whether the connection can serve another request.
  awaitable<bool> RunAsyncReply(AsyncReply& reply, bool keep_alive) {
    const auto executor = co_await net::this_coro::executor;
    auto state = std::make_shared<WaitState>(executor);
    reply.SetNotify([state, executor] {
      net::post(executor, [state] {
        state->notified = true;
        state->timer.cancel();
      });
    });
    if (buffer_.size() == 0) {  // a pipelined request would be misread as a disconnect
      state->watching = true;
      net::co_spawn(executor, WatchPeer(state), net::detached);
    }
    bool connection_usable = true;
    if (reply.streaming()) {
      connection_usable = co_await StartStream(keep_alive);
    }
    while (connection_usable) {
      ReplyProgress progress = reply.Poll();
      if (!progress.stream_data.empty() && !co_await WriteChunk(progress.stream_data)) {
        connection_usable = false;
        break;
      }
      if (progress.response) {
        connection_usable = co_await WriteResponse(*progress.response, keep_alive);
        break;
      }
      if (progress.done) {
        if (reply.streaming()) connection_usable = co_await FinishStream();
        break;
      }
      if (state->client_gone) {
        connection_usable = false;
        break;
      }
      if (!state->notified) {
        // keepalive_interval 0: no comment lines, just wait for the reply.
        const bool keepalive = options_.keepalive_interval > absl::ZeroDuration();
        state->timer.expires_after(keepalive ? Chrono(options_.keepalive_interval)
                                             : std::chrono::hours(24));
        beast::error_code ec;
        co_await state->timer.async_wait(net::redirect_error(use_awaitable, ec));
        if (!ec && keepalive && !state->notified && reply.streaming() &&
            !co_await WriteChunk(": keep-alive\n\n")) {
          connection_usable = false;
          break;
        }
      }
      state->notified = false;
    }
    if (!connection_usable) reply.Cancel();
    reply.SetNotify(nullptr);
    // Stop the watcher before the connection reads again.
    while (state->watching) {
      beast::error_code ignored;
      stream_.socket().cancel(ignored);
      state->timer.expires_after(std::chrono::seconds(1));
      co_await state->timer.async_wait(net::redirect_error(use_awaitable, ignored));
    }
    co_return connection_usable && !state->client_gone;
  }

  awaitable<bool> StartStream(bool keep_alive) {
    http::response<http::empty_body> header{http::status::ok, 11};
    SetCommonFields(header.base());
    header.set(http::field::content_type, "text/event-stream; charset=utf-8");
    header.set(http::field::cache_control, "no-cache");
    header.set("X-Accel-Buffering", "no");
    header.keep_alive(keep_alive);
    header.chunked(true);
    http::response_serializer<http::empty_body> serializer{header};
    stream_.expires_after(Chrono(options_.write_timeout));
    beast::error_code ec;
    co_await http::async_write_header(stream_, serializer, net::redirect_error(use_awaitable, ec));
    co_return !ec;
  }

  awaitable<bool> FinishStream() {
    stream_.expires_after(Chrono(options_.write_timeout));
    beast::error_code ec;
    co_await net::async_write(stream_, http::make_chunk_last(),
                              net::redirect_error(use_awaitable, ec));
    co_return !ec;
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  const HttpServerOptions& options_;
  const Router& router_;
};

}  // namespace

struct HttpServer::Impl {
  Impl(const HttpServerOptions& options, const Router& router)
      : options(options), router(router), acceptor(io) {}

  awaitable<void> Accept() {
    while (acceptor.is_open()) {
      beast::error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(net::make_strand(io),
                                                          net::redirect_error(use_awaitable, ec));
      if (ec) {
        if (ec == net::error::operation_aborted) co_return;
        spdlog::warn("accept: {}", ec.message());
        continue;
      }
      // Streamed events are small writes; without TCP_NODELAY, Nagle's algorithm holds each
      // one until the client's delayed ACK (tens of ms of time to first token).
      socket.set_option(tcp::no_delay(true), ec);
      const auto executor = socket.get_executor();
      net::co_spawn(
          executor,
          [session = std::make_shared<Session>(std::move(socket), options, router)]()
              -> awaitable<void> { co_await session->Run(); },
          net::detached);
    }
  }

  const HttpServerOptions options;
  const Router& router;
  net::io_context io;
  tcp::acceptor acceptor;
  std::vector<std::thread> threads;
};

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Create(const HttpServerOptions& options,
                                                               const Router& router) {
  auto impl = std::make_unique<Impl>(options, router);
  beast::error_code ec;
  const auto address = net::ip::make_address(options.host, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("server.host '", options.host, "' is not an IP address"));
  }
  const tcp::endpoint endpoint(address, options.port);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.host, ":", options.port, ": ", ec.message()));
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

uint16_t HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void HttpServer::Start() {
  net::co_spawn(impl_->acceptor.get_executor(), impl_->Accept(), net::detached);
  for (int32_t i = 0; i < std::max(1, impl_->options.io_threads); ++i) {
    impl_->threads.emplace_back([this] { impl_->io.run(); });
  }
}

void HttpServer::Stop() {
  if (impl_->threads.empty()) return;
  net::post(impl_->io, [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
  });
  impl_->io.stop();
  for (auto& thread : impl_->threads) thread.join();
  impl_->threads.clear();
}

}  // namespace kvd::server
