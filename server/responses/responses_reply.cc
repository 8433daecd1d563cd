#include "server/responses/responses_reply.h"

#include <utility>

#include "absl/time/clock.h"
#include "base/check.h"
#include "server/http/error_response.h"
#include "server/openai/openai_json.h"
#include "spdlog/spdlog.h"

namespace kvd::server::responses {

using structured::JsonValue;

namespace {

JsonValue OrDefault(const std::optional<double>& value, double fallback) {
  return value ? JsonValue(*value) : JsonValue(fallback);
}

}  // namespace

ResponsesReply::ResponsesReply(ResponseContext context, CompletionParams params,
                               std::vector<scheduler::RequestHandle> handles,
                               std::unique_ptr<TenantPermit> permit,
                               std::function<void(const ReplyOutcome&)> on_done)
    : generation_(std::move(params), std::move(handles), std::move(permit), std::move(on_done)),
      context_(std::move(context)),
      created_at_(absl::ToUnixSeconds(absl::Now())) {
  KVD_CHECK(generation_.output().size() == 1);
}

void ResponsesReply::SetNotify(std::function<void()> notify) {
  {
    base::MutexLock lock(write_->mu);
    write_->notify = notify;
  }
  generation_.SetNotify(std::move(notify));
}

void ResponsesReply::Cancel() { generation_.Cancel(); }

void ResponsesReply::Event(const std::string& type, JsonValue body, std::string& events) {
  if (!generation_.params().stream) return;
  JsonValue event = {{"type", type}, {"sequence_number", sequence_++}};
  for (auto& [key, value] : body.items()) event[key] = std::move(value);
  events += "event: " + type + "\ndata: " + DumpOrdered(event) + "\n\n";
}

JsonValue ResponsesReply::ItemJson(const Item& item, bool done) const {
  const char* status = done ? "completed" : "in_progress";
  if (item.call) {
    return {{"id", item.id},           {"type", "function_call"}, {"status", status},
            {"call_id", item.call_id}, {"name", item.name},       {"arguments", item.text}};
  }
  JsonValue content = JsonValue::array();
  if (done) {
    content.push_back({{"type", "output_text"},
                       {"text", item.text},
                       {"annotations", JsonValue::array()},
                       {"logprobs", JsonValue::array()}});
  }
  return {{"id", item.id},
          {"type", "message"},
          {"status", status},
          {"role", "assistant"},
          {"content", std::move(content)}};
}

void ResponsesReply::OpenItem(Item item, std::string& events) {
  CloseItem(events);
  items_.push_back(std::move(item));
  open_ = true;
  const int64_t index = static_cast<int64_t>(items_.size()) - 1;
  const Item& opened = items_.back();
  Event("response.output_item.added", {{"output_index", index}, {"item", ItemJson(opened, false)}},
        events);
  if (!opened.call) {
    Event("response.content_part.added",
          {{"item_id", opened.id},
           {"output_index", index},
           {"content_index", 0},
           {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", JsonValue::array()}}}},
          events);
  }
}

void ResponsesReply::CloseItem(std::string& events) {
  if (!open_) return;
  open_ = false;
  const int64_t index = static_cast<int64_t>(items_.size()) - 1;
  const Item& item = items_.back();
  if (item.call) {
    Event("response.function_call_arguments.done",
          {{"item_id", item.id},
           {"output_index", index},
           {"name", item.name},
           {"arguments", item.text}},
          events);
  } else {
    Event("response.output_text.done",
          {{"item_id", item.id},
           {"output_index", index},
           {"content_index", 0},
           {"text", item.text},
           {"logprobs", JsonValue::array()}},
          events);
    Event("response.content_part.done",
          {{"item_id", item.id},
           {"output_index", index},
           {"content_index", 0},
           {"part",
            {{"type", "output_text"}, {"text", item.text}, {"annotations", JsonValue::array()}}}},
          events);
  }
  Event("response.output_item.done", {{"output_index", index}, {"item", ItemJson(item, true)}},
        events);
}

void ResponsesReply::Take(const ChoiceDelta& delta, std::string& events) {
  if (!delta.content.empty()) {
    if (!open_ || items_.back().call) OpenItem({.id = RandomId("msg_")}, events);
    items_.back().text += delta.content;
    Event("response.output_text.delta",
          {{"item_id", items_.back().id},
           {"output_index", static_cast<int64_t>(items_.size()) - 1},
           {"content_index", 0},
           {"delta", delta.content},
           {"logprobs", JsonValue::array()}},
          events);
  }
  for (const ToolCallDelta& call : delta.calls) {
    if (!call.id.empty()) {
      OpenItem({.call = true, .id = RandomId("fc_"), .call_id = call.id, .name = call.name},
               events);
    }
    KVD_CHECK(open_ && items_.back().call);
    items_.back().text += call.arguments;
    if (call.arguments.empty()) continue;
    Event("response.function_call_arguments.delta",
          {{"item_id", items_.back().id},
           {"output_index", static_cast<int64_t>(items_.size()) - 1},
           {"delta", call.arguments}},
          events);
  }
}

std::string ResponsesReply::FinalStatus() const {
  const ChoiceOutput& choice = generation_.output().choice(0);
  return choice.finish == scheduler::FinishReason::kLength ? "incomplete" : "completed";
}

JsonValue ResponsesReply::Response(const std::string& status) const {
  const ResponsesRequest& request = context_.request;
  const CompletionParams& params = generation_.params();
  const bool ended = status != "in_progress";
  JsonValue output = JsonValue::array();
  if (ended) {
    for (const Item& item : items_) output.push_back(ItemJson(item, true));
  }
  JsonValue usage;
  if (ended) {
    const scheduler::Usage& counted = generation_.usage();
    usage = {{"input_tokens", counted.prompt_tokens},
             {"input_tokens_details", {{"cached_tokens", counted.cached_tokens}}},
             {"output_tokens", counted.completion_tokens},
             {"output_tokens_details", {{"reasoning_tokens", 0}}},
             {"total_tokens", counted.total_tokens()}};
  }
  const CompletionRequest& asked = request.completion;
  return {{"id", context_.id},
          {"object", "response"},
          {"created_at", created_at_},
          {"status", status},
          {"error", nullptr},
          {"incomplete_details",
           status == "incomplete" ? JsonValue{{"reason", "max_output_tokens"}} : JsonValue()},
          {"instructions", request.instructions ? JsonValue(*request.instructions) : JsonValue()},
          {"max_output_tokens", asked.max_tokens ? JsonValue(*asked.max_tokens) : JsonValue()},
          {"model", context_.model},
          {"output", std::move(output)},
          {"parallel_tool_calls", asked.parallel_tool_calls},
          {"previous_response_id",
           request.previous_response_id ? JsonValue(*request.previous_response_id) : JsonValue()},
          {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
          {"store", context_.store != nullptr},
          {"temperature", OrDefault(SentSampling(asked, "temperature"), params.request.sampling.temperature)},
          {"text", {{"format", request.text_format}}},
          {"tool_choice", request.tool_choice},
          {"tools", request.tools},
          {"top_p", OrDefault(SentSampling(asked, "top_p"), params.request.sampling.top_p)},
          {"truncation", "disabled"},
          {"usage", std::move(usage)},
          {"user", asked.user.empty() ? JsonValue() : JsonValue(asked.user)},
          {"metadata", request.metadata}};
}

StoredResponse ResponsesReply::StoredOf(const JsonValue& response) const {
  StoredResponse stored{.response = response, .conversation = context_.conversation};
  for (const Item& item : items_) {
    stored.conversation.push_back(
        item.call ? JsonValue{{"type", "function_call"},
                              {"call_id", item.call_id},
                              {"name", item.name},
                              {"arguments", item.text}}
                  : JsonValue{{"type", "message"}, {"role", "assistant"}, {"content", item.text}});
  }
  return stored;
}

void ResponsesReply::End(const JsonValue& response, ReplyProgress& progress) {
  if (generation_.params().stream) {
    Event(response["status"] == "completed" ? "response.completed" : "response.incomplete",
          {{"response", response}}, progress.stream_data);
  } else {
    progress.response = HttpResponse{.status = 200, .body = DumpOrdered(response)};
  }
  generation_.Finish(200, absl::OkStatus());
  progress.done = true;
}

ReplyProgress ResponsesReply::Poll() {
  ReplyProgress progress;
  if (generation_.finished()) {
    progress.done = true;
    return progress;
  }
  if (ending_) {
    {
      base::MutexLock lock(write_->mu);
      if (!write_->status) return progress;
    }
    End(*ending_, progress);
    return progress;
  }
  std::string& events = progress.stream_data;
  if (!started_) {
    started_ = true;
    Event("response.created", {{"response", Response("in_progress")}}, events);
    Event("response.in_progress", {{"response", Response("in_progress")}}, events);
  }
  std::vector<ChoiceDelta> deltas;
  const bool ended = generation_.Drain(deltas);
  for (const ChoiceDelta& delta : deltas) Take(delta, events);
  if (!ended) return progress;
  const absl::Status error = generation_.error();
  if (!error.ok()) {
    progress.done = true;
    if (generation_.params().stream) {
      const std::vector<std::pair<std::string, std::string>> fields = ErrorFields(error);
      JsonValue body = {
          {"code", nullptr}, {"message", std::string(error.message())}, {"param", nullptr}};
      for (const auto& [name, value] : fields) {
        if (name == "kvd-error-code") body["code"] = value;
        if (name == "kvd-error-param") body["param"] = value;
      }
      Event("error", std::move(body), events);
    } else {
      progress.response = ErrorResponse(error);
    }
    generation_.Finish(HttpStatusFor(error), error);
    return progress;
  }
  if (items_.empty()) OpenItem({.id = RandomId("msg_")}, events);
  CloseItem(events);
  JsonValue response = Response(FinalStatus());
  if (context_.store == nullptr) {
    End(response, progress);
    return progress;
  }
  auto write = [store = context_.store, tenant = context_.tenant, id = context_.id,
                stored = StoredOf(response), pending = write_] {
    absl::Status status = store->Put(tenant, id, stored);
    if (!status.ok()) {
      spdlog::error("response {} was not stored: {}", id, std::string(status.message()));
    }
    std::function<void()> notify;
    {
      base::MutexLock lock(pending->mu);
      pending->status = std::move(status);
      notify = pending->notify;
    }
    if (notify) notify();
  };
  if (context_.store_workers == nullptr || !context_.store_workers->Post(write)) {
    write();
    End(response, progress);
    return progress;
  }
  ending_ = std::move(response);
  return progress;
}

}  // namespace kvd::server::responses
