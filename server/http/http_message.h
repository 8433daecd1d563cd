// The HTTP request and reply types the route handlers see: plain structs with no Beast types,
// so handlers compile without Asio and can be tested without a socket.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kvd::server {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string path;                            // the target without the query string
  std::string query;                           // after '?', undecoded
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::map<std::string, std::string> path_params;  // {name} segments of the matched route

  // The header's value, or empty.
  const std::string& header(const std::string& lower_case_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

// What an asynchronous reply has ready when polled.
struct ReplyProgress {
  std::string stream_data;               // bytes to append to a streaming (SSE) body
  std::optional<HttpResponse> response;  // the whole reply of a non-streaming request
  bool done = false;                     // nothing more will come
};

// A reply that completes later, fed by the scheduler thread. The session waits for `notify`,
// then polls; it never blocks an I/O thread.
class AsyncReply {
 public:
  virtual ~AsyncReply() = default;
  // true: the session answers 200 with `text/event-stream` and writes stream_data as it comes;
  // false: the session waits for `response`. Asked before every Poll until true (a deferred
  // reply becomes streaming once its work is done), and never false again once true.
  virtual bool streaming() const = 0;
  // `notify` may be called from any thread whenever Poll may have something new.
  virtual void SetNotify(std::function<void()> notify) = 0;
  // Non-blocking.
  virtual ReplyProgress Poll() = 0;
  // The client went away: stop the work behind the reply.
  virtual void Cancel() = 0;
};

using HandlerResult = std::variant<HttpResponse, std::unique_ptr<AsyncReply>>;
using Handler = std::function<HandlerResult(HttpRequest&)>;

}  // namespace kvd::server
