#include "server/responses/shared_response_store.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace kvd::server::responses {

using cache_store::RedisPool;
using cache_store::RedisReply;

SharedResponseStore::SharedResponseStore(std::shared_ptr<RedisPool> pool, std::string key_prefix,
                                         absl::Duration ttl)
    : pool_(std::move(pool)), key_prefix_(std::move(key_prefix)), ttl_(ttl) {}

std::string SharedResponseStore::Key(const std::string& tenant, const std::string& id) const {
  // The tenant in hex ends at the first ':', so no tenant's keys are another's.
  return absl::StrCat(key_prefix_, "resp:", absl::BytesToHexString(tenant), ":", id);
}

absl::StatusOr<RedisReply> SharedResponseStore::Call(RedisPool::Call call,
                                                     std::vector<std::string> command,
                                                     const char* doing) {
  absl::StatusOr<std::vector<RedisReply>> replies = pool_->Run(call, {std::move(command)});
  if (!replies.ok()) return replies.status();
  if (replies->size() != 1 || replies->front().type == RedisReply::Type::kError) {
    pool_->CountRefusal();
    return cache_store::RedisRefused(replies->empty() ? RedisReply{} : replies->front(), doing);
  }
  return std::move(replies->front());
}

absl::Status SharedResponseStore::Put(const std::string& tenant, const std::string& id,
                                      const StoredResponse& stored) {
  const absl::Time expires = absl::Now() + ttl_;
  absl::StatusOr<RedisReply> reply =
      Call(RedisPool::Call::kWrite,
           {"SET", Key(tenant, id), EncodeResponseRecord(stored, absl::ToUnixSeconds(expires)),
            "PX", std::to_string(absl::ToInt64Milliseconds(ttl_))},
           "a response's write");
  if (!reply.ok()) return reply.status();
  if (reply->type != RedisReply::Type::kStatus) {
    return cache_store::RedisRefused(*reply, "a response's write");
  }
  return absl::OkStatus();
}

absl::StatusOr<StoredResponse> SharedResponseStore::Get(const std::string& tenant,
                                                        const std::string& id) {
  absl::StatusOr<RedisReply> reply =
      Call(RedisPool::Call::kRead, {"GET", Key(tenant, id)}, "a response's read");
  if (!reply.ok()) return reply.status();
  if (reply->type == RedisReply::Type::kNil) return ResponseNotFound(id);
  if (reply->type != RedisReply::Type::kString) {
    return cache_store::RedisRefused(*reply, "a response's read");
  }
  absl::StatusOr<ResponseRecord> record = DecodeResponseRecord(reply->text, id);
  if (!record.ok()) return record.status();
  if (ResponseExpired(record->expires_at)) return ResponseNotFound(id);
  return std::move(record->stored);
}

absl::Status SharedResponseStore::Delete(const std::string& tenant, const std::string& id) {
  absl::StatusOr<RedisReply> reply =
      Call(RedisPool::Call::kWrite, {"DEL", Key(tenant, id)}, "a response's delete");
  if (!reply.ok()) return reply.status();
  if (reply->type != RedisReply::Type::kInteger) {
    return cache_store::RedisRefused(*reply, "a response's delete");
  }
  return reply->integer == 0 ? ResponseNotFound(id) : absl::OkStatus();
}

}  // namespace kvd::server::responses
