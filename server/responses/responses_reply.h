// The reply to POST /v1/responses: a generation's output (server/core/generation.h) as the
// Responses API's response object — output items (`message` with `output_text`,
// `function_call`), `status` (`incomplete` at max_output_tokens) and `usage` — or its stream of
// typed events: response.created and .in_progress; per item output_item.added, for a message
// content_part.added, output_text.delta and .done, content_part.done, for a call
// function_call_arguments.delta and .done; output_item.done; then response.completed (or
// .incomplete). Streamed and whole replies build their items the same way, from the same
// deltas. With `store`, the response and its conversation are kept when it ends, before the
// reply's end is written.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "documents/request_workers.h"
#include "server/auth/tenants.h"
#include "server/core/completion_params.h"
#include "server/core/generation.h"
#include "server/http/http_message.h"
#include "server/responses/response_store.h"
#include "server/responses/responses_request.h"

namespace kvd::server::responses {

// What the response object echoes of its request, and where it is kept.
struct ResponseContext {
  std::string id;  // "resp_…"
  std::string model;
  std::string tenant;
  ResponsesRequest request;            // its completion part moved into the generation
  structured::JsonValue conversation;  // the input items, the previous responses' first
  ResponseStore* store = nullptr;      // null: not kept
  // Where a remote store's write runs (the routes' workers); null: on the replying thread.
  documents::RequestWorkers* store_workers = nullptr;
};

class ResponsesReply final : public AsyncReply {
 public:
  ResponsesReply(ResponseContext context, CompletionParams params,
                 std::vector<scheduler::RequestHandle> handles,
                 std::unique_ptr<TenantPermit> permit,
                 std::function<void(const ReplyOutcome&)> on_done);

  bool streaming() const override { return generation_.params().stream; }
  void SetNotify(std::function<void()> notify) override;
  ReplyProgress Poll() override;
  void Cancel() override;

 private:
  struct Item {
    bool call = false;
    std::string id;       // msg_… or fc_…
    std::string text;     // a message's text, a call's arguments
    std::string call_id;  // call_…
    std::string name;
  };

  // Takes in a delta: items opened, extended and closed; their events when streaming.
  void Take(const ChoiceDelta& delta, std::string& events);
  void OpenItem(Item item, std::string& events);
  void CloseItem(std::string& events);
  void Event(const std::string& type, structured::JsonValue body, std::string& events);
  structured::JsonValue ItemJson(const Item& item, bool done) const;
  // The response object: `status` "in_progress" before the end.
  structured::JsonValue Response(const std::string& status) const;
  std::string FinalStatus() const;
  // What the store keeps of the ended response.
  StoredResponse StoredOf(const structured::JsonValue& response) const;
  // Ends the reply with `response`: its last event, or the whole object.
  void End(const structured::JsonValue& response, ReplyProgress& progress);

  // A response's write to a remote store, on store_workers: the reply ends once it is done, so
  // that a client that continues the response at once finds it.
  struct PendingWrite {
    base::Mutex mu;
    std::optional<absl::Status> status ABSL_GUARDED_BY(mu);
    std::function<void()> notify ABSL_GUARDED_BY(mu);
  };

  Generation generation_;
  ResponseContext context_;
  const int64_t created_at_;
  std::vector<Item> items_;
  bool open_ = false;  // items_.back() is still being written
  int64_t sequence_ = 0;
  bool started_ = false;
  const std::shared_ptr<PendingWrite> write_ = std::make_shared<PendingWrite>();
  std::optional<structured::JsonValue> ending_;  // the ended response while its write runs
};

}  // namespace kvd::server::responses
