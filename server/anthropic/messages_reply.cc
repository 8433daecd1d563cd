#include "server/anthropic/messages_reply.h"

#include <utility>

#include "base/check.h"
#include "server/anthropic/anthropic_error.h"
#include "server/http/error_response.h"
#include "server/openai/openai_json.h"
#include "structured/json_rules.h"
#include "text/bounded_json.h"

namespace kvd::server::anthropic {

using json = nlohmann::json;

MessagesReply::MessagesReply(CompletionParams params, std::vector<scheduler::RequestHandle> handles,
                             std::string model_name, std::unique_ptr<TenantPermit> permit,
                             std::function<void(const ReplyOutcome&)> on_done)
    : generation_(std::move(params), std::move(handles), std::move(permit), std::move(on_done),
                  "toolu_"),
      params_(generation_.params()),
      model_name_(std::move(model_name)),
      id_(RandomId("msg_")) {
  KVD_CHECK(generation_.output().size() == 1);
}

void MessagesReply::SetNotify(std::function<void()> notify) {
  generation_.SetNotify(std::move(notify));
}

void MessagesReply::Cancel() { generation_.Cancel(); }

json MessagesReply::Usage() const {
  const scheduler::Usage& usage = generation_.usage();
  return {{"input_tokens", usage.prompt_tokens - usage.cached_tokens},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", usage.cached_tokens},
          {"output_tokens", usage.completion_tokens}};
}

json MessagesReply::StopReason() const {
  const ChoiceOutput& choice = generation_.output().choice(0);
  if (!choice.finish) return json();
  switch (*choice.finish) {
    case scheduler::FinishReason::kLength:
      return "max_tokens";
    case scheduler::FinishReason::kStop:
      if (!choice.calls.empty()) return "tool_use";
      return choice.stop_string.empty() ? "end_turn" : "stop_sequence";
    case scheduler::FinishReason::kAbort:
      return "end_turn";
  }
  return json();
}

json MessagesReply::StopSequence() const {
  const ChoiceOutput& choice = generation_.output().choice(0);
  return choice.stop_string.empty() || !choice.calls.empty() ? json() : json(choice.stop_string);
}

json MessagesReply::Message() const {
  const ChoiceOutput& choice = generation_.output().choice(0);
  json content = json::array();
  if (!choice.content.empty()) content.push_back({{"type", "text"}, {"text", choice.content}});
  for (const ToolCallOutput& call : choice.calls) {
    // A call cut short (max_tokens) has no whole input: it is given as {}.
    auto input = text::ParseBoundedJson<structured::JsonValue>(call.arguments, "the input");
    json block = {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}};
    block["input"] = input.ok() && input->is_object()
                         ? json::parse(input->dump(-1, ' ', false, json::error_handler_t::replace))
                         : json::object();
    content.push_back(std::move(block));
  }
  return {{"id", id_},
          {"type", "message"},
          {"role", "assistant"},
          {"model", model_name_},
          {"content", std::move(content)},
          {"stop_reason", StopReason()},
          {"stop_sequence", StopSequence()},
          {"usage", Usage()}};
}

std::string MessagesReply::OpenBlock(Block kind, json content_block) {
  std::string events = CloseBlock();
  open_ = kind;
  ++block_index_;
  events += SseEvent("content_block_start", Dump({{"type", "content_block_start"},
                                                  {"index", block_index_},
                                                  {"content_block", std::move(content_block)}}));
  return events;
}

std::string MessagesReply::CloseBlock() {
  if (open_ == Block::kNone) return "";
  open_ = Block::kNone;
  return SseEvent("content_block_stop",
                  Dump({{"type", "content_block_stop"}, {"index", block_index_}}));
}

std::string MessagesReply::DeltaEvents(const ChoiceDelta& delta) {
  std::string events;
  if (!delta.content.empty()) {
    if (open_ != Block::kText) events += OpenBlock(Block::kText, {{"type", "text"}, {"text", ""}});
    events += SseEvent("content_block_delta",
                       Dump({{"type", "content_block_delta"},
                             {"index", block_index_},
                             {"delta", {{"type", "text_delta"}, {"text", delta.content}}}}));
  }
  for (const ToolCallDelta& call : delta.calls) {
    if (!call.id.empty()) {
      events += OpenBlock(
          Block::kToolUse,
          {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", json::object()}});
    }
    KVD_CHECK(open_ == Block::kToolUse);
    if (call.arguments.empty()) continue;
    events += SseEvent(
        "content_block_delta",
        Dump({{"type", "content_block_delta"},
              {"index", block_index_},
              {"delta", {{"type", "input_json_delta"}, {"partial_json", call.arguments}}}}));
  }
  return events;
}

ReplyProgress MessagesReply::Poll() {
  ReplyProgress progress;
  if (generation_.finished()) {
    progress.done = true;
    return progress;
  }
  if (params_.stream && !started_) {
    json message = {{"id", id_},
                    {"type", "message"},
                    {"role", "assistant"},
                    {"model", model_name_},
                    {"content", json::array()},
                    {"stop_reason", nullptr},
                    {"stop_sequence", nullptr},
                    {"usage",
                     {{"input_tokens", params_.prompts.front().size()},
                      {"cache_creation_input_tokens", 0},
                      {"cache_read_input_tokens", 0},
                      {"output_tokens", 0}}}};
    progress.stream_data =
        SseEvent("message_start", Dump({{"type", "message_start"}, {"message", message}})) +
        SseEvent("ping", R"({"type": "ping"})");
  }
  started_ = true;
  std::vector<ChoiceDelta> deltas;
  const bool ended = generation_.Drain(deltas);
  if (params_.stream) {
    for (const ChoiceDelta& delta : deltas) progress.stream_data += DeltaEvents(delta);
  }
  if (!ended) return progress;
  const absl::Status error = generation_.error();
  progress.done = true;
  if (!error.ok()) {
    if (params_.stream) {
      progress.stream_data += SseEvent("error", ErrorBody(error));
    } else {
      progress.response = ErrorResponse(error);
    }
    generation_.Finish(HttpStatusFor(error), error);
    return progress;
  }
  if (params_.stream) {
    progress.stream_data += CloseBlock();
    progress.stream_data += SseEvent(
        "message_delta",
        Dump({{"type", "message_delta"},
              {"delta", {{"stop_reason", StopReason()}, {"stop_sequence", StopSequence()}}},
              {"usage", Usage()}}));
    progress.stream_data += SseEvent("message_stop", R"({"type": "message_stop"})");
  } else {
    progress.response = HttpResponse{.status = 200, .body = Dump(Message())};
  }
  generation_.Finish(200, absl::OkStatus());
  return progress;
}

}  // namespace kvd::server::anthropic
