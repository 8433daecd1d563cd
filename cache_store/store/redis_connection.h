// One connection to a Redis server through hiredis's blocking API: it connects on first use and
// again after any I/O error, authenticates and selects its database, and bounds every call by a
// timeout, so a dead or slow server is an Unavailable status, never a hang. The first connect
// makes the process ignore SIGPIPE (hiredis writes with write(2)). Not thread-safe: a pool
// (remote_document_store.h) lends each connection to one caller at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

struct redisContext;

namespace kvd::cache_store {

// Where a Redis server is and who to be there.
struct RedisEndpoint {
  std::string host;       // TCP host; empty with a unix socket
  int port = 6379;        // TCP port
  std::string unix_path;  // unix socket path; empty over TCP
  int db = 0;             // the database SELECTed after connecting
  std::string user;       // ACL user ("" the default user)
  std::string password;   // "" sends no AUTH

  bool operator==(const RedisEndpoint&) const = default;
};

// Parses redis://[[USER][:PASSWORD]@]HOST[:PORT][/DB] and unix://PATH[?db=DB] (user and password
// percent-decoded). InvalidArgument saying what is wrong; rediss:// (TLS) is refused, as
// Debian 12's hiredis 0.14 has no TLS.
[[nodiscard]] absl::StatusOr<RedisEndpoint> ParseRedisUrl(std::string_view url);

// A reply as hiredis parsed it, owned.
struct RedisReply {
  enum class Type { kNil, kString, kInteger, kArray, kStatus, kError };
  Type type = Type::kNil;
  std::string text;  // kString, kStatus and kError
  int64_t integer = 0;
  std::vector<RedisReply> elements;  // kArray
};

class RedisConnection {
 public:
  // `timeout` bounds the connect and each read and write.
  RedisConnection(RedisEndpoint endpoint, absl::Duration timeout);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends `commands` in one write and returns their replies in order (a command the server
  // refused is a kError reply among them). Unavailable when the server cannot be reached, does
  // not answer within the timeout, or refuses the credentials; the connection is then dropped
  // and the next call connects again.
  [[nodiscard]] absl::StatusOr<std::vector<RedisReply>> Pipeline(
      const std::vector<std::vector<std::string>>& commands);

 private:
  [[nodiscard]] absl::Status Connect();
  void Drop();

  const RedisEndpoint endpoint_;
  const absl::Duration timeout_;
  redisContext* context_ = nullptr;
};

}  // namespace kvd::cache_store
