#include "cache_store/store/redis_connection.h"

#include <hiredis/hiredis.h>
#include <signal.h>

#include <charconv>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kvd::cache_store {
namespace {

absl::Status BadUrl(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("Redis URL: ", why));
}

// A decimal integer in [low, high], the whole of `text`.
bool ParseInt(std::string_view text, int low, int high, int& out) {
  if (text.empty()) return false;
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return false;
  if (value < low || value > high) return false;
  out = value;
  return true;
}

absl::StatusOr<std::string> PercentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    unsigned value = 0;
    if (i + 2 >= text.size()) {
      return BadUrl("a '%' in the user or password is not followed by two hex digits");
    }
    const auto [end, error] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
    if (error != std::errc() || end != text.data() + i + 3) {
      return BadUrl("a '%' in the user or password is not followed by two hex digits");
    }
    out.push_back(static_cast<char>(value));
    i += 2;
  }
  return out;
}

RedisReply Convert(const redisReply& reply) {
  RedisReply out;
  switch (reply.type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      out.type = reply.type == REDIS_REPLY_STRING   ? RedisReply::Type::kString
                 : reply.type == REDIS_REPLY_STATUS ? RedisReply::Type::kStatus
                                                    : RedisReply::Type::kError;
      out.text.assign(reply.str, reply.len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = reply.integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      out.elements.reserve(reply.elements);
      for (size_t i = 0; i < reply.elements; ++i) out.elements.push_back(Convert(*reply.element[i]));
      break;
    default:
      out.type = RedisReply::Type::kNil;
      break;
  }
  return out;
}

}  // namespace

absl::StatusOr<RedisEndpoint> ParseRedisUrl(std::string_view url) {
  RedisEndpoint endpoint;
  if (url.starts_with("rediss://")) {
    return BadUrl(
        "rediss:// (TLS) is not supported by this build's hiredis; reach Redis over a private "
        "network or a TLS tunnel (stunnel, a service mesh) and use redis://");
  }
  if (url.starts_with("unix://")) {
    std::string_view rest = url.substr(7);
    if (const size_t query = rest.find('?'); query != std::string_view::npos) {
      std::string_view option = rest.substr(query + 1);
      rest = rest.substr(0, query);
      if (!option.starts_with("db=") || !ParseInt(option.substr(3), 0, 1 << 20, endpoint.db)) {
        return BadUrl("a unix:// URL takes only ?db=N");
      }
    }
    if (rest.empty() || rest.front() != '/') return BadUrl("unix:// needs an absolute path");
    endpoint.unix_path = std::string(rest);
    return endpoint;
  }
  if (!url.starts_with("redis://")) {
    return BadUrl("must start with redis:// or unix://");
  }
  std::string_view rest = url.substr(8);
  std::string_view path;
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    std::string_view user = userinfo;
    std::string_view password;
    if (const size_t colon = userinfo.find(':'); colon != std::string_view::npos) {
      user = userinfo.substr(0, colon);
      password = userinfo.substr(colon + 1);
    }
    absl::StatusOr<std::string> decoded_user = PercentDecode(user);
    if (!decoded_user.ok()) return decoded_user.status();
    absl::StatusOr<std::string> decoded_password = PercentDecode(password);
    if (!decoded_password.ok()) return decoded_password.status();
    endpoint.user = *std::move(decoded_user);
    endpoint.password = *std::move(decoded_password);
  }
  std::string_view port;
  const bool bracketed = rest.starts_with('[');
  if (bracketed) {  // [IPv6]:port
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return BadUrl("an IPv6 host lacks its ']'");
    endpoint.host = std::string(rest.substr(1, close - 1));
    rest = rest.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return BadUrl("expected ':PORT' after the IPv6 host");
      port = rest.substr(1);
      if (port.empty()) return BadUrl("empty port");
    }
  } else {
    const size_t colon = rest.rfind(':');
    endpoint.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = rest.substr(colon + 1);
      if (port.empty()) return BadUrl("empty port");
    }
  }
  if (endpoint.host.empty()) return BadUrl("no host");
  if (endpoint.host.find_first_of(bracketed ? "[]" : "[]:") != std::string::npos) {
    return BadUrl("the host is not a name or an address (an IPv6 address goes in [brackets])");
  }
  if (!port.empty() && !ParseInt(port, 1, 65535, endpoint.port)) {
    return BadUrl("the port must be a number in [1, 65535]");
  }
  if (!path.empty() && !ParseInt(path, 0, 1 << 20, endpoint.db)) {
    return BadUrl("the path must be a database number");
  }
  return endpoint;
}

RedisConnection::RedisConnection(RedisEndpoint endpoint, absl::Duration timeout)
    : endpoint_(std::move(endpoint)), timeout_(timeout) {}

RedisConnection::~RedisConnection() { Drop(); }

void RedisConnection::Drop() {
  if (context_ != nullptr) redisFree(context_);
  context_ = nullptr;
}

absl::Status RedisConnection::Connect() {
  // hiredis writes with write(2): on a connection Redis closed, that raises SIGPIPE, which
  // would end the process. Ignored once per process, so that it is the write's error instead.
  [[maybe_unused]] static const bool sigpipe_ignored = [] {
    signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  const timeval timeout = absl::ToTimeval(timeout_);
  const std::string where = endpoint_.unix_path.empty()
                                ? absl::StrCat(endpoint_.host, ":", endpoint_.port)
                                : endpoint_.unix_path;
  context_ = endpoint_.unix_path.empty()
                 ? redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, timeout)
                 : redisConnectUnixWithTimeout(endpoint_.unix_path.c_str(), timeout);
  if (context_ == nullptr) return absl::UnavailableError("cannot allocate a Redis connection");
  if (context_->err != 0) {
    const std::string why = context_->errstr;
    Drop();
    return absl::UnavailableError(absl::StrCat("cannot connect to Redis at ", where, ": ", why));
  }
  if (redisSetTimeout(context_, timeout) != REDIS_OK) {
    Drop();
    return absl::UnavailableError(absl::StrCat("cannot set the timeout of Redis at ", where));
  }
  if (endpoint_.unix_path.empty()) (void)redisEnableKeepAlive(context_);
  std::vector<std::vector<std::string>> setup;
  if (!endpoint_.password.empty()) {
    if (endpoint_.user.empty()) {
      setup.push_back({"AUTH", endpoint_.password});
    } else {
      setup.push_back({"AUTH", endpoint_.user, endpoint_.password});
    }
  }
  if (endpoint_.db != 0) setup.push_back({"SELECT", std::to_string(endpoint_.db)});
  if (setup.empty()) return absl::OkStatus();
  absl::StatusOr<std::vector<RedisReply>> replies = Pipeline(setup);
  if (!replies.ok()) return replies.status();
  for (const RedisReply& reply : *replies) {
    if (reply.type == RedisReply::Type::kError) {
      Drop();
      return absl::UnavailableError(
          absl::StrCat("Redis at ", where, " refused the connection's setup: ", reply.text));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RedisReply>> RedisConnection::Pipeline(
    const std::vector<std::vector<std::string>>& commands) {
  if (context_ == nullptr) {
    if (absl::Status status = Connect(); !status.ok()) return status;
  }
  const auto failed = [this](absl::string_view doing) {
    const std::string why = context_->errstr;
    Drop();
    return absl::UnavailableError(absl::StrCat("Redis ", doing, " failed: ", why));
  };
  for (const std::vector<std::string>& command : commands) {
    std::vector<const char*> argv;
    std::vector<size_t> lengths;
    for (const std::string& arg : command) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    if (redisAppendCommandArgv(context_, static_cast<int>(argv.size()), argv.data(),
                               lengths.data()) != REDIS_OK) {
      return failed("sending a command");
    }
  }
  std::vector<RedisReply> replies;
  replies.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(context_, &raw) != REDIS_OK || raw == nullptr) {
      return failed("reading a reply");
    }
    replies.push_back(Convert(*static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
  }
  return replies;
}

}  // namespace kvd::cache_store
