#include "server/kv_events/kv_events_reply.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/http/error_response.h"
#include "server/http/query_string.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

json HashJson(const std::string& hash) { return hash.empty() ? json(nullptr) : json(hash); }

json EventJson(const scheduler::KvEvent& event, int32_t block_size, const std::string& medium) {
  switch (event.kind) {
    case scheduler::KvEvent::Kind::kBlockStored:
      return {{"type", "BlockStored"},
              {"block_hashes", event.block_hashes},
              {"parent_block_hash", HashJson(event.parent_block_hash)},
              {"token_ids", event.token_ids},
              {"block_size", block_size},
              {"lora_id", nullptr},
              {"medium", medium}};
    case scheduler::KvEvent::Kind::kBlockRemoved:
      return {{"type", "BlockRemoved"}, {"block_hashes", event.block_hashes}, {"medium", medium}};
    case scheduler::KvEvent::Kind::kAllBlocksCleared:
      return {{"type", "AllBlocksCleared"}};
  }
  return nullptr;
}

bool IsDecimal(std::string_view text) {
  return !text.empty() && text.size() <= 20 &&
         text.find_first_not_of("0123456789") == std::string_view::npos;
}

// "0", or "EPOCH-N" as EventId writes it: the batch to follow from in `log` (0 for another
// epoch's).
absl::StatusOr<uint64_t> ParseAfter(const std::string& text, std::string_view param,
                                    const scheduler::KvEventLog& log) {
  if (text == "0") return 0;
  const size_t dash = text.find('-');
  uint64_t epoch = 0, sequence = 0;
  if (dash == std::string::npos || !IsDecimal(std::string_view(text).substr(0, dash)) ||
      !IsDecimal(std::string_view(text).substr(dash + 1)) ||
      !absl::SimpleAtoi(text.substr(0, dash), &epoch) ||
      !absl::SimpleAtoi(text.substr(dash + 1), &sequence)) {
    return WithParam(
        absl::InvalidArgumentError(absl::StrCat(
            "'", std::string(param), "' must be 0 or an event id the stream gave (EPOCH-N)")),
        param);
  }
  return epoch == log.epoch() ? sequence : 0;
}

}  // namespace

json KvEventBatchJson(const scheduler::KvEventBatch& batch, int32_t block_size,
                      const std::string& medium) {
  json events = json::array();
  for (const scheduler::KvEvent& event : batch.events) {
    events.push_back(EventJson(event, block_size, medium));
  }
  return {{"seq", batch.sequence},
          {"ts", batch.timestamp},
          {"events", std::move(events)},
          {"data_parallel_rank", nullptr}};
}

absl::StatusOr<uint64_t> KvEventsAfter(const HttpRequest& request,
                                       const scheduler::KvEventLog& log) {
  auto params = ParseQueryString(request.query);
  if (!params.ok()) return params.status();
  for (const auto& [name, value] : *params) {
    if (name != "after") {
      return WithParam(
          absl::InvalidArgumentError(absl::StrCat("unsupported query parameter '", name, "'")),
          name);
    }
  }
  if (const auto after = params->find("after"); after != params->end()) {
    return ParseAfter(after->second, "after", log);
  }
  const std::string& last_event_id = request.header("last-event-id");
  if (last_event_id.empty()) return 0;
  return ParseAfter(last_event_id, "Last-Event-ID", log);
}

KvEventsReply::KvEventsReply(const scheduler::KvEventLog& log, uint64_t after, std::string medium,
                             const std::atomic<bool>& stopping)
    : log_(log), after_(after), medium_(std::move(medium)), stopping_(stopping) {}

KvEventsReply::~KvEventsReply() { RemoveListener(); }

void KvEventsReply::RemoveListener() {
  if (listener_) log_.RemoveListener(*listener_);
  listener_.reset();
}

void KvEventsReply::SetNotify(std::function<void()> notify) {
  RemoveListener();
  if (notify) listener_ = log_.AddListener(std::move(notify));
}

ReplyProgress KvEventsReply::Poll() {
  ReplyProgress progress;
  if (cancelled_ || stopping_.load()) {
    progress.done = true;
    return progress;
  }
  for (const scheduler::KvEventBatch& batch : log_.Since(after_)) {
    absl::StrAppend(&progress.stream_data, "id: ", log_.epoch(), "-", batch.sequence,
                    "\ndata: ", KvEventBatchJson(batch, log_.block_size(), medium_).dump(), "\n\n");
    after_ = batch.sequence;
  }
  return progress;
}

}  // namespace kvd::server
