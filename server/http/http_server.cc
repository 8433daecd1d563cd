#include "server/http/http_server.h"

#include <algorithm>
#include <array>
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
#include <chrono>
#include <thread>
#include <utility>  // before Asio: Boost 1.74 with g++ 12 needs std::exchange declared first
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "server/http/connection_limiter.h"
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

// The lingering close after an error reply (Session::DiscardUntilClosed): the longest the
// client may stay silent, the longest it may keep sending, and the most it may send.
constexpr std::chrono::seconds kLingerSilence(5);
constexpr std::chrono::seconds kLingerTime(30);
constexpr size_t kLingerBytes = size_t{256} << 20;

// How a connection's wait for its next request ended.
enum class ReadOutcome { kRequest, kReply, kClosed };

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpServerOptions& options, const Router& router)
      : stream_(std::move(socket)),
        read_deadline_(stream_.get_executor()),
        buffer_(RequestParser::MaxBufferedBytes(options.limits)),
        options_(options),
        router_(router) {}

  awaitable<void> Run() {
    bool keep_alive = true;
    while (keep_alive) {
      RequestParser parser(options_.limits);
      HttpResponse error;
      const ReadOutcome outcome = co_await ReadRequest(parser, error);
      if (outcome == ReadOutcome::kClosed) break;
      if (outcome == ReadOutcome::kReply) {
        if (co_await WriteResponse(error, /*keep_alive=*/false)) co_await DiscardUntilClosed();
        break;
      }
      keep_alive = parser.keep_alive();
      chunked_ = parser.http11();
      HttpRequest request = parser.TakeRequest();
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
  // After an error reply to a request that was not read whole (a body over the limit, say):
  // stop sending, then read and drop what the client is still sending, so that closing with
  // unread bytes does not reset the connection before the client reads the reply. A client that
  // writes its whole body before it reads (Python's http.client, many proxies) is still sending
  // megabytes. Bounded as nginx's lingering close is: until the client closes, goes quiet for
  // kLingerSilence, has sent kLingerBytes, or kLingerTime has passed.
  awaitable<void> DiscardUntilClosed() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    const auto give_up_at = std::chrono::steady_clock::now() + kLingerTime;
    std::array<char, 16384> sink;
    for (size_t discarded = 0; !ec && discarded < kLingerBytes;) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= give_up_at) break;
      stream_.expires_after(
          std::min<std::chrono::steady_clock::duration>(kLingerSilence, give_up_at - now));
      discarded += co_await stream_.async_read_some(net::buffer(sink),
                                                    net::redirect_error(use_awaitable, ec));
    }
  }

  // Reads until `parser` has a whole request. The idle timeout runs until its first byte, the
  // read timeout from then to its last, however slowly the bytes come. kReply: `error` is the
  // answer to send before closing (a limit, a malformed request, a timeout).
  awaitable<ReadOutcome> ReadRequest(RequestParser& parser, HttpResponse& error) {
    // The idle timeout closes the stream (Beast's timeouts do); the read deadline only cancels
    // the read, so that the connection can still carry the 408.
    stream_.expires_after(Chrono(options_.idle_timeout));
    ++request_number_;
    const auto disarm = absl::MakeCleanup([this] {
      reading_done_for_ = request_number_;
      read_deadline_.cancel();
    });
    read_timed_out_ = false;
    bool read_deadline_set = false;
    while (true) {
      if (buffer_.size() > 0) {
        size_t consumed = 0;
        const auto data = buffer_.data();
        const RequestParser::Progress progress = parser.Put(
            std::string_view(static_cast<const char*>(data.data()), data.size()), consumed);
        buffer_.consume(consumed);
        if (progress == RequestParser::Progress::kDone) co_return ReadOutcome::kRequest;
        if (progress == RequestParser::Progress::kFailed) {
          error = parser.error();
          co_return ReadOutcome::kReply;
        }
      }
      if (parser.started() && !read_deadline_set) {
        stream_.expires_never();
        ArmReadDeadline();
        read_deadline_set = true;
      }
      if (parser.AwaitsContinue()) {
        parser.ContinueSent();
        if (!co_await WriteContinue()) co_return ReadOutcome::kClosed;
      }
      beast::error_code ec;
      const size_t room = std::min(RequestParser::kReadBytes, buffer_.max_size() - buffer_.size());
      const size_t read = co_await stream_.async_read_some(buffer_.prepare(room),
                                                           net::redirect_error(use_awaitable, ec));
      buffer_.commit(read);
      if (read_timed_out_) {
        error = ErrorResponse(WithErrorCode(
            absl::DeadlineExceededError("the request did not arrive within the read timeout"),
            "request_timeout"));
        error.status = 408;
        co_return ReadOutcome::kReply;
      }
      if (ec) co_return ReadOutcome::kClosed;  // the peer left, reset, or idled out
    }
  }

  // Cancels the socket's read once the read timeout passes, unless this request was read by
  // then (a later request has another number).
  void ArmReadDeadline() {
    read_deadline_.expires_after(Chrono(options_.read_timeout));
    read_deadline_.async_wait(
        [self = shared_from_this(), number = request_number_](const beast::error_code& ec) {
          if (ec || number != self->request_number_ || self->reading_done_for_ == number) return;
          self->read_timed_out_ = true;
          beast::error_code ignored;
          self->stream_.socket().cancel(ignored);
        });
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

  // The interim reply a client that sent `Expect: 100-continue` waits for before its body (curl
  // waits a second for bodies over 1 MiB). The read deadline keeps running meanwhile.
  awaitable<bool> WriteContinue() {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    stream_.expires_after(Chrono(options_.write_timeout));
    beast::error_code ec;
    co_await net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                              net::redirect_error(use_awaitable, ec));
    stream_.expires_never();
    co_return !ec;
  }

  // A piece of a streamed body: a chunk, or the bytes as they are for an HTTP/1.0 client.
  awaitable<bool> WriteChunk(std::string_view data) {
    stream_.expires_after(Chrono(options_.write_timeout));
    beast::error_code ec;
    const net::const_buffer bytes = net::buffer(data.data(), data.size());
    if (chunked_) {
      co_await net::async_write(stream_, http::make_chunk(bytes),
                                net::redirect_error(use_awaitable, ec));
    } else {
      co_await net::async_write(stream_, bytes, net::redirect_error(use_awaitable, ec));
    }
    co_return !ec;
  }

  // Reads from the socket while a reply is pending: an end of stream or a reset means the client
  // went away. Bytes of pipelined requests are kept for the next read, up to what one request
  // may buffer; past that the watch ends (the client stops being read until the reply is done).
  awaitable<void> WatchPeer(std::shared_ptr<WaitState> state) {
    while (true) {
      const size_t room = std::min(RequestParser::kReadBytes, buffer_.max_size() - buffer_.size());
      if (room == 0) break;
      beast::error_code ec;
      const size_t read = co_await stream_.socket().async_read_some(
          buffer_.prepare(room), net::redirect_error(use_awaitable, ec));
      buffer_.commit(read);
      if (ec) {
        if (ec != net::error::operation_aborted) state->client_gone = true;
        break;
      }
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
    state->watching = true;
    net::co_spawn(executor, WatchPeer(state), net::detached);
    bool connection_usable = true;
    // A reply streams from the moment it says so: at once for a completion's, after the work
    // before it for a deferred one (whose refusal is then still a plain error response).
    bool streaming = false;
    while (connection_usable) {
      if (!streaming && reply.streaming()) {
        streaming = true;
        // An HTTP/1.0 client's stream ends where the connection does.
        connection_usable = co_await StartStream(keep_alive && chunked_);
        if (!connection_usable) break;
      }
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
        if (streaming) connection_usable = co_await FinishStream();
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
        if (!ec && keepalive && !state->notified && streaming &&
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
    co_return connection_usable && !state->client_gone && (chunked_ || !streaming);
  }

  awaitable<bool> StartStream(bool keep_alive) {
    http::response<http::empty_body> header{http::status::ok, 11};
    SetCommonFields(header.base());
    header.set(http::field::content_type, "text/event-stream; charset=utf-8");
    header.set(http::field::cache_control, "no-cache");
    header.set("X-Accel-Buffering", "no");
    header.keep_alive(keep_alive);
    header.chunked(chunked_);
    http::response_serializer<http::empty_body> serializer{header};
    stream_.expires_after(Chrono(options_.write_timeout));
    beast::error_code ec;
    co_await http::async_write_header(stream_, serializer, net::redirect_error(use_awaitable, ec));
    co_return !ec;
  }

  awaitable<bool> FinishStream() {
    if (!chunked_) co_return true;  // the connection's close ends the body
    stream_.expires_after(Chrono(options_.write_timeout));
    beast::error_code ec;
    co_await net::async_write(stream_, http::make_chunk_last(),
                              net::redirect_error(use_awaitable, ec));
    co_return !ec;
  }

  beast::tcp_stream stream_;
  // Whether the request being answered takes a chunked body (HTTP/1.1), else a streamed body is
  // sent as it is and ends with the connection.
  bool chunked_ = true;
  // The read timeout of the request being read, and which request that is; touched only on the
  // connection's strand.
  net::steady_timer read_deadline_;
  uint64_t request_number_ = 0;
  uint64_t reading_done_for_ = 0;
  bool read_timed_out_ = false;
  beast::flat_buffer buffer_;
  const HttpServerOptions& options_;
  const Router& router_;
};

// Accept errors that mean the process or system is out of a resource (file descriptors,
// buffers): retrying at once would fail again at once. Compared with Boost's own `errc`: a
// comparison with `std::errc` goes through Boost 1.74's std::error_category bridge, which
// UBSan's vptr check rejects.
bool IsResourceShortage(const beast::error_code& ec) {
  return ec == net::error::no_descriptors || ec == net::error::no_buffer_space ||
         ec == net::error::no_memory || ec == boost::system::errc::too_many_files_open_in_system;
}

// The reply to a connection over a limit, written without waiting and then closed.
void TurnAway(tcp::socket& socket) {
  static const std::string* const kReply = [] {
    const absl::Status status = WithRetryAfter(
        WithErrorCode(absl::UnavailableError("the server has too many open connections"),
                      "too_many_connections"),
        1);
    const std::string body = ErrorJson(status);
    return new std::string(
        absl::StrCat("HTTP/1.1 503 Service Unavailable\r\nServer: kvd/", kVersion,
                     "\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\n"
                     "Content-Length: ",
                     body.size(), "\r\n\r\n", body));
  }();
  beast::error_code ignored;
  socket.non_blocking(true, ignored);
  socket.write_some(net::buffer(*kReply), ignored);
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
}

void LogSessionEnd(std::exception_ptr error) {
  if (error == nullptr) return;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    spdlog::error("connection ended by an exception: {}", e.what());
  } catch (...) {
    spdlog::error("connection ended by an exception");
  }
}

}  // namespace

struct HttpServer::Impl {
  Impl(const HttpServerOptions& options, const Router& router)
      : options(options),
        router(router),
        connections(options.max_connections, options.max_connections_per_client),
        acceptor(io) {}

  awaitable<void> Accept() {
    net::steady_timer backoff(acceptor.get_executor());
    while (acceptor.is_open()) {
      beast::error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(net::make_strand(io),
                                                          net::redirect_error(use_awaitable, ec));
      if (ec == net::error::operation_aborted) co_return;
      if (ec) {
        LogAcceptError(ec);
        if (IsResourceShortage(ec)) {
          backoff.expires_after(std::chrono::milliseconds(100));
          co_await backoff.async_wait(net::redirect_error(use_awaitable, ec));
        }
        continue;
      }
      std::string client = socket.remote_endpoint(ec).address().to_string();
      if (ec) continue;  // the peer already left
      if (!connections.TryAcquire(client)) {
        TurnAway(socket);
        continue;
      }
      // Streamed events are small writes; without TCP_NODELAY, Nagle's algorithm holds each
      // one until the client's delayed ACK (tens of ms of time to first token).
      socket.set_option(tcp::no_delay(true), ec);
      const auto executor = socket.get_executor();
      auto session = std::make_shared<Session>(std::move(socket), options, router);
      net::co_spawn(
          executor,
          [this, session, client = std::move(client)]() -> awaitable<void> {
            struct Release {
              ~Release() { limiter.Release(client); }
              ConnectionLimiter& limiter;
              const std::string& client;
            } release{connections, client};
            co_await session->Run();
          },
          LogSessionEnd);
    }
  }

  // One line per distinct error at most every 10 seconds: a descriptor shortage fails every
  // accept, and a line each would flood the log.
  void LogAcceptError(const beast::error_code& ec) {
    const auto now = std::chrono::steady_clock::now();
    if (ec == last_accept_error && now - last_accept_log < std::chrono::seconds(10)) {
      ++suppressed_accept_errors;
      return;
    }
    if (suppressed_accept_errors > 0) {
      spdlog::warn("accept: {} ({} more since the last message)", ec.message(),
                   suppressed_accept_errors);
    } else {
      spdlog::warn("accept: {}", ec.message());
    }
    last_accept_error = ec;
    last_accept_log = now;
    suppressed_accept_errors = 0;
  }

  const HttpServerOptions options;
  const Router& router;
  // Before `io`, whose destructor destroys the sessions still pending, which release their slots.
  ConnectionLimiter connections;
  net::io_context io;
  tcp::acceptor acceptor;
  std::vector<std::thread> threads;
  // Touched only by Accept, on the acceptor's executor.
  beast::error_code last_accept_error;
  std::chrono::steady_clock::time_point last_accept_log;
  int64_t suppressed_accept_errors = 0;
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
