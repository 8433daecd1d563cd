#include "server/http/request_parser.h"

#include <boost/beast/http.hpp>
#include <cctype>
#include <exception>
#include <limits>
#include <string>
#include <utility>  // before Asio: Boost 1.74 with g++ 12 needs std::exchange declared first

#include "absl/strings/str_cat.h"
#include "server/http/error_response.h"

namespace kvd::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

// Headers a request may carry once only: a second copy would make its meaning depend on which
// copy a proxy and kvd each pick.
bool IsSingleton(std::string_view lower_case_name) {
  return lower_case_name == "authorization" || lower_case_name == "host" ||
         lower_case_name == "content-type";
}

HttpResponse HeadTooLarge(std::string_view what) {
  HttpResponse response = ErrorResponse(
      absl::InvalidArgumentError(absl::StrCat(std::string(what), " exceeds the server's header limit")));
  response.status = 431;
  return response;
}

HttpResponse ParseError(const beast::error_code& ec) {
  if (ec == http::error::body_limit) {
    return ErrorResponse(
        WithErrorCode(absl::InvalidArgumentError("the request body exceeds the server's limit"),
                      "request_too_large"));
  }
  if (ec == http::error::header_limit) return HeadTooLarge("the request head");
  return ErrorResponse(
      absl::InvalidArgumentError(absl::StrCat("malformed HTTP request: ", ec.message())));
}

std::string_view View(beast::string_view text) { return {text.data(), text.size()}; }

std::string LowerCase(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

}  // namespace

struct RequestParser::Beast {
  http::request_parser<http::string_body> parser;
};

RequestParser::RequestParser(const RequestLimits& limits)
    : limits_(limits), beast_(std::make_unique<Beast>()) {
  beast_->parser.header_limit(static_cast<std::uint32_t>(
      std::min<size_t>(limits_.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
  beast_->parser.body_limit(limits_.max_body_bytes);
}

RequestParser::~RequestParser() = default;

RequestParser::Progress RequestParser::Put(std::string_view input, size_t& consumed) {
  consumed = 0;
  if (!input.empty()) started_ = true;
  auto& parser = beast_->parser;
  while (true) {
    const bool head_done = parser.is_header_done();
    const size_t body_before = parser.get().body().size();
    beast::error_code ec;
    size_t used = 0;
    try {
      used = parser.put(boost::asio::buffer(input.data() + consumed, input.size() - consumed), ec);
    } catch (const std::exception&) {
      // Beast throws std::length_error for one field name or value over 64 KiB.
      return Fail(HeadTooLarge(head_done ? "a trailer field" : "a header field"));
    }
    consumed += used;
    if (!head_done) head_bytes_ += used;
    // One put after the head takes one chunk's data or one line of framing, or the last chunk
    // with the whole trailer: what is not body is framing, and stays within the head's limit.
    if (head_done && used - (parser.get().body().size() - body_before) > limits_.max_header_bytes) {
      return Fail(HeadTooLarge("the chunked body's trailer or a chunk line"));
    }
    const size_t pending = input.size() - consumed;
    if (ec == http::error::need_more) {
      // Beast leaves an incomplete head, trailer or chunk line unconsumed and rescans it; without
      // these bounds a client could grow it without limit.
      if (!parser.is_header_done() && head_bytes_ + pending > limits_.max_header_bytes) {
        return Fail(HeadTooLarge("the request head"));
      }
      if (parser.is_header_done() && pending > limits_.max_header_bytes) {
        return Fail(HeadTooLarge("the chunked body's trailer or a chunk line"));
      }
      return Progress::kNeedMore;
    }
    if (ec) return Fail(ParseError(ec));
    if (!head_done && head_bytes_ > limits_.max_header_bytes) {
      return Fail(HeadTooLarge("the request head"));
    }
    if (parser.is_done()) return Finish();
    if (pending == 0) return Progress::kNeedMore;
  }
}

bool RequestParser::AwaitsContinue() const {
  const auto& parser = beast_->parser;
  if (continue_sent_ || !parser.is_header_done() || parser.is_done()) return false;
  const auto& request = parser.get();
  return request.version() >= 11 && request.body().empty() &&
         beast::iequals(request[http::field::expect], "100-continue");
}

RequestParser::Progress RequestParser::Fail(HttpResponse response) {
  error_ = std::move(response);
  return Progress::kFailed;
}

RequestParser::Progress RequestParser::Finish() {
  http::request<http::string_body> message = beast_->parser.release();
  keep_alive_ = message.keep_alive();
  http11_ = message.version() >= 11;
  request_.method = std::string(message.method_string());
  const std::string_view target = View(message.target());
  const size_t question = target.find('?');
  request_.path = std::string(target.substr(0, question));
  if (question != std::string_view::npos) request_.query = std::string(target.substr(question + 1));
  for (const auto& field : message) {
    std::string name = LowerCase(View(field.name_string()));
    const std::string_view value = View(field.value());
    const auto [it, inserted] = request_.headers.try_emplace(name, value);
    if (inserted) continue;
    if (IsSingleton(name)) {
      return Fail(ErrorResponse(absl::InvalidArgumentError(
          absl::StrCat("the request has more than one ", std::string(View(field.name_string())), " header"))));
    }
    // A list-valued header sent as several lines means the same as one line joined by commas.
    it->second.append(", ").append(value);
  }
  if (http11_ && !request_.headers.contains("host")) {
    return Fail(
        ErrorResponse(absl::InvalidArgumentError("an HTTP/1.1 request must carry a Host header")));
  }
  // Chunked is the one transfer coding read: a body also in another (gzip, chunked) would be
  // taken as if it were plain.
  if (const auto coding = request_.headers.find("transfer-encoding");
      coding != request_.headers.end() && !beast::iequals(coding->second, "chunked")) {
    HttpResponse response = ErrorResponse(absl::UnimplementedError(
        absl::StrCat("transfer coding '", coding->second,
                     "' is not supported; send the body plain or chunked")));
    response.status = 501;
    return Fail(std::move(response));
  }
  request_.body = std::move(message.body());
  return Progress::kDone;
}

HttpRequest RequestParser::TakeRequest() { return std::move(request_); }

}  // namespace kvd::server
