#include "cache_store/store/remote_document_store.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_details.h"
#include "cache_store/store/payload_codec.h"

namespace kvd::cache_store {
namespace {

constexpr int32_t kMaxListLimit = 1000;
// Index entries read per round trip while a page is filled past expired ids.
constexpr int32_t kListBatch = 64;

absl::Status DocumentNotFound(const std::string& id) {
  return absl::NotFoundError(absl::StrCat("document ", id, " not found"));
}

// Replaces a document's hash, its expiry and its index entry in one step, unless ARGV[1] is "1"
// and the document is gone (deleted or expired since): then writes nothing and returns 0.
// KEYS: the document, its tenant's index. ARGV: must exist ("1" or "0"), meta, payload ("" for
// none), expiry in Unix milliseconds ("" for none), id.
constexpr char kWriteScript[] = R"lua(
if ARGV[1] == '1' and redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('DEL', KEYS[1])
if ARGV[3] == '' then
  redis.call('HSET', KEYS[1], 'meta', ARGV[2])
else
  redis.call('HSET', KEYS[1], 'meta', ARGV[2], 'kv', ARGV[3])
end
if ARGV[4] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[4]) end
redis.call('ZADD', KEYS[2], 0, ARGV[5])
return 1
)lua";

std::string UnixMillis(absl::Time time) { return std::to_string(absl::ToUnixMillis(time)); }

}  // namespace

RemoteDocumentStore::RemoteDocumentStore(RemoteStoreOptions options)
    : options_(std::move(options)),
      pool_({.endpoint = options_.endpoint,
             .timeout = options_.timeout,
             .idle_connections = options_.idle_connections}) {}

std::string RemoteDocumentStore::DocumentKey(const std::string& tenant,
                                             const std::string& id) const {
  // The tenant in hex ends at the first ':', so no tenant's keys are another's.
  return absl::StrCat(options_.key_prefix, "doc:", absl::BytesToHexString(tenant), ":", id);
}

std::string RemoteDocumentStore::IndexKey(const std::string& tenant) const {
  return absl::StrCat(options_.key_prefix, "ids:", absl::BytesToHexString(tenant));
}

void RemoteDocumentStore::Count(const std::function<void(RemoteStoreStats&)>& update) {
  base::MutexLock lock(stats_mu_);
  update(stats_);
}

RemoteStoreStats RemoteDocumentStore::Stats() const {
  RemoteStoreStats stats;
  {
    base::MutexLock lock(stats_mu_);
    stats = stats_;
  }
  const RedisCallStats calls = pool_.Stats();
  stats.reads = calls.reads;
  stats.writes = calls.writes;
  stats.failures = calls.failures;
  stats.seconds = calls.seconds;
  return stats;
}

absl::StatusOr<std::vector<RedisReply>> RemoteDocumentStore::Run(
    Call call, const std::vector<std::vector<std::string>>& commands) {
  return pool_.Run(call == Call::kRead ? RedisPool::Call::kRead : RedisPool::Call::kWrite,
                   commands);
}

absl::StatusOr<std::vector<RedisReply>> RemoteDocumentStore::Transaction(
    Call call, std::vector<std::vector<std::string>> commands) {
  const size_t count = commands.size();
  commands.insert(commands.begin(), {"MULTI"});
  commands.push_back({"EXEC"});
  absl::StatusOr<std::vector<RedisReply>> replies = Run(call, commands);
  if (!replies.ok()) return replies.status();
  for (const RedisReply& reply : *replies) {
    if (reply.type == RedisReply::Type::kError) {
      pool_.CountRefusal();
      return RedisRefused(reply, "a transaction");
    }
  }
  RedisReply& exec = replies->back();
  if (exec.type != RedisReply::Type::kArray || exec.elements.size() != count) {
    pool_.CountRefusal();
    return absl::UnavailableError("Redis aborted a transaction");
  }
  for (const RedisReply& reply : exec.elements) {
    if (reply.type == RedisReply::Type::kError) {
      pool_.CountRefusal();
      return RedisRefused(reply, "a command of a transaction");
    }
  }
  return std::move(exec.elements);
}

absl::Status RemoteDocumentStore::Ping() {
  absl::StatusOr<std::vector<RedisReply>> replies = Run(Call::kRead, {{"PING"}});
  if (!replies.ok()) return replies.status();
  if (replies->front().type == RedisReply::Type::kError) return RedisRefused(replies->front(), "PING");
  return absl::OkStatus();
}

absl::Status RemoteDocumentStore::Write(const DocumentMeta& meta, const std::string& payload,
                                        absl::Time expires, bool must_exist) {
  absl::StatusOr<std::vector<RedisReply>> replies = Run(
      Call::kWrite,
      {{"EVAL", kWriteScript, "2", DocumentKey(meta.tenant, meta.id), IndexKey(meta.tenant),
        must_exist ? "1" : "0", EncodeMeta(meta), payload,
        expires == absl::InfiniteFuture() ? "" : UnixMillis(expires), meta.id}});
  if (!replies.ok()) return replies.status();
  const RedisReply& reply = replies->front();
  if (reply.type != RedisReply::Type::kInteger) return RedisRefused(reply, "a write");
  if (reply.integer == 0) {
    return absl::NotFoundError(
        absl::StrCat("document ", meta.id, " was deleted while it was being written"));
  }
  return absl::OkStatus();
}

absl::Status RemoteDocumentStore::Put(DocumentMeta meta, const DocumentPayload& payload,
                                      bool must_exist) {
  absl::StatusOr<std::string> bytes = SealDocument(meta, payload);
  if (!bytes.ok()) return bytes.status();
  if (meta.stored_bytes > options_.max_payload_bytes) {
    return WithErrorCode(
        absl::InvalidArgumentError(absl::StrCat(
            "document ", meta.id, "'s cache takes ", meta.stored_bytes,
            " bytes, more than the shared tier's limit of ", options_.max_payload_bytes,
            " (store.remote.max_payload_bytes)")),
        "request_too_large");
  }
  if (absl::Status status = Write(meta, *bytes, meta.expires, must_exist); !status.ok()) {
    return status;
  }
  Count([&](RemoteStoreStats& stats) { stats.bytes_written += meta.stored_bytes; });
  return absl::OkStatus();
}

absl::Status RemoteDocumentStore::PutMeta(const DocumentMeta& meta, bool must_exist) {
  if (absl::Status status = meta.Validate(); !status.ok()) return status;
  absl::Time expires = meta.expires;
  if (meta.status == DocumentStatus::kProcessing) {
    expires = std::min(expires, absl::Now() + options_.processing_lease);
  }
  return Write(meta, "", expires, must_exist);
}

absl::StatusOr<DocumentMeta> RemoteDocumentStore::DecodeOwnMeta(const std::string& bytes,
                                                                const std::string& tenant,
                                                                const std::string& id) const {
  absl::StatusOr<DocumentMeta> meta = DecodeMeta(bytes);
  if (!meta.ok()) {
    return absl::DataLossError(absl::StrCat("document ", id, " in the shared tier: ",
                                            std::string(meta.status().message())));
  }
  if (meta->tenant != tenant || meta->id != id) {
    return absl::DataLossError(
        absl::StrCat("the shared tier's value for document ", id, " names another document"));
  }
  return meta;
}

absl::StatusOr<DocumentMeta> RemoteDocumentStore::GetMeta(const std::string& tenant,
                                                          const std::string& id) {
  absl::StatusOr<std::vector<RedisReply>> replies =
      Run(Call::kRead, {{"HGET", DocumentKey(tenant, id), "meta"}});
  if (!replies.ok()) return replies.status();
  const RedisReply& reply = replies->front();
  if (reply.type == RedisReply::Type::kNil) return DocumentNotFound(id);
  if (reply.type != RedisReply::Type::kString) return RedisRefused(reply, "a meta read");
  return DecodeOwnMeta(reply.text, tenant, id);
}

absl::StatusOr<RemoteDocument> RemoteDocumentStore::GetDocument(const std::string& tenant,
                                                                const std::string& id) {
  absl::StatusOr<std::vector<RedisReply>> replies =
      Run(Call::kRead, {{"HMGET", DocumentKey(tenant, id), "meta", "kv"}});
  if (!replies.ok()) return replies.status();
  RedisReply& reply = replies->front();
  if (reply.type != RedisReply::Type::kArray || reply.elements.size() != 2) {
    return RedisRefused(reply, "a document read");
  }
  const RedisReply& meta_reply = reply.elements[0];
  RedisReply& kv_reply = reply.elements[1];
  if (meta_reply.type != RedisReply::Type::kString) {
    Count([](RemoteStoreStats& stats) { ++stats.misses; });
    return DocumentNotFound(id);
  }
  absl::StatusOr<DocumentMeta> meta = DecodeOwnMeta(meta_reply.text, tenant, id);
  if (!meta.ok()) return meta.status();
  if (meta->status != DocumentStatus::kReady) {
    Count([](RemoteStoreStats& stats) { ++stats.misses; });
    return absl::FailedPreconditionError(
        absl::StrCat("document ", id, " is ", DocumentStatusName(meta->status), ", not ready"));
  }
  const auto lost = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat("document ", id, " in the shared tier: ", why));
  };
  if (kv_reply.type != RedisReply::Type::kString) return lost("ready but has no payload");
  const int64_t size = static_cast<int64_t>(kv_reply.text.size());
  if (size > options_.max_payload_bytes) return lost("its payload exceeds max_payload_bytes");
  if (size != meta->stored_bytes) return lost("its payload is not the size its meta records");
  absl::StatusOr<DocumentPayload> payload = DecodePayload(kv_reply.text);
  if (!payload.ok()) return lost(payload.status().message());
  if (payload->kept_entries() != meta->kept_entries || payload->storage != meta->storage) {
    return lost("its payload is not the cache its meta describes");
  }
  Count([&](RemoteStoreStats& stats) {
    ++stats.hits;
    stats.bytes_read += size;
  });
  return RemoteDocument{*std::move(meta), *std::move(payload), std::move(kv_reply.text)};
}

absl::StatusOr<DocumentPage> RemoteDocumentStore::List(const std::string& tenant,
                                                       const std::string& page_token,
                                                       int32_t limit) {
  if (limit < 1 || limit > kMaxListLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("list limit must be in [1, ", kMaxListLimit, "], got ", limit));
  }
  const std::string index = IndexKey(tenant);
  DocumentPage page;
  std::string after = page_token;
  while (true) {
    const int32_t want = std::max(kListBatch, limit + 1 - static_cast<int32_t>(page.documents.size()));
    absl::StatusOr<std::vector<RedisReply>> ids =
        Run(Call::kRead, {{"ZRANGEBYLEX", index, after.empty() ? "-" : "(" + after, "+", "LIMIT",
                           "0", std::to_string(want)}});
    if (!ids.ok()) return ids.status();
    const RedisReply& id_reply = ids->front();
    if (id_reply.type != RedisReply::Type::kArray) return RedisRefused(id_reply, "a list");
    if (id_reply.elements.empty()) return page;
    std::vector<std::vector<std::string>> reads;
    std::string previous = after;
    for (const RedisReply& id : id_reply.elements) {
      // Ids come sorted and past the cursor, or the index is not one kvd wrote: stop, as a
      // loop over what a broken server repeats would never end.
      if (id.type != RedisReply::Type::kString || id.text <= previous) {
        return RedisRefused(id, "a list");
      }
      previous = id.text;
      reads.push_back({"HGET", DocumentKey(tenant, id.text), "meta"});
    }
    absl::StatusOr<std::vector<RedisReply>> metas = Run(Call::kRead, reads);
    if (!metas.ok()) return metas.status();
    std::vector<std::string> expired;
    bool full = false;
    for (size_t i = 0; i < metas->size() && !full; ++i) {
      const std::string& id = id_reply.elements[i].text;
      const RedisReply& reply = (*metas)[i];
      after = id;
      if (reply.type == RedisReply::Type::kNil) {
        expired.push_back(id);
      } else if (reply.type != RedisReply::Type::kString) {
        return RedisRefused(reply, "a list");
      } else if (static_cast<int32_t>(page.documents.size()) == limit) {
        page.next_page_token = page.documents.back().id;
        full = true;
      } else {
        absl::StatusOr<DocumentMeta> meta = DecodeOwnMeta(reply.text, tenant, id);
        if (!meta.ok()) return meta.status();
        page.documents.push_back(*std::move(meta));
      }
    }
    if (!expired.empty()) {
      std::vector<std::string> command = {"ZREM", index};
      command.insert(command.end(), expired.begin(), expired.end());
      // Best effort: a later list drops them as well.
      (void)Run(Call::kWrite, {command});
    }
    if (full || static_cast<int32_t>(id_reply.elements.size()) < want) return page;
  }
}

absl::StatusOr<std::vector<bool>> RemoteDocumentStore::Exist(
    const std::vector<std::pair<std::string, std::string>>& documents) {
  std::vector<std::vector<std::string>> commands;
  commands.reserve(documents.size());
  for (const auto& [tenant, id] : documents) commands.push_back({"EXISTS", DocumentKey(tenant, id)});
  if (commands.empty()) return std::vector<bool>{};
  absl::StatusOr<std::vector<RedisReply>> replies = Run(Call::kRead, commands);
  if (!replies.ok()) return replies.status();
  std::vector<bool> exist;
  for (const RedisReply& reply : *replies) {
    if (reply.type != RedisReply::Type::kInteger) return RedisRefused(reply, "EXISTS");
    exist.push_back(reply.integer != 0);
  }
  return exist;
}

absl::Status RemoteDocumentStore::Delete(const std::string& tenant, const std::string& id) {
  absl::StatusOr<std::vector<RedisReply>> replies = Transaction(
      Call::kWrite, {{"DEL", DocumentKey(tenant, id)}, {"ZREM", IndexKey(tenant), id}});
  if (!replies.ok()) return replies.status();
  if (replies->front().type != RedisReply::Type::kInteger || replies->front().integer == 0) {
    return DocumentNotFound(id);
  }
  return absl::OkStatus();
}

}  // namespace kvd::cache_store
