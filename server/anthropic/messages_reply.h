// The reply to POST /v1/messages: a generation's output (server/core/generation.h) shaped as
// Anthropic's Messages API does — one message with `content` blocks (text, then tool_use with
// the parsed `input`), `stop_reason` and `usage`; or its stream of events: message_start, ping,
// per block content_block_start / content_block_delta (text_delta, input_json_delta) /
// content_block_stop, then message_delta with the stop reason and usage, and message_stop. An
// error after the stream began is an `error` event.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "scheduler/request_handle.h"
#include "server/auth/tenants.h"
#include "server/core/completion_params.h"
#include "server/core/generation.h"
#include "server/http/http_message.h"

namespace kvd::server::anthropic {

class MessagesReply final : public AsyncReply {
 public:
  // One handle (messages have one prompt and one choice). `on_done` runs once.
  MessagesReply(CompletionParams params, std::vector<scheduler::RequestHandle> handles,
                std::string model_name, std::unique_ptr<TenantPermit> permit,
                std::function<void(const ReplyOutcome&)> on_done);

  bool streaming() const override { return params_.stream; }
  void SetNotify(std::function<void()> notify) override;
  ReplyProgress Poll() override;
  void Cancel() override;

 private:
  enum class Block { kNone, kText, kToolUse };

  // The events of a delta: blocks opened, extended and closed.
  std::string DeltaEvents(const ChoiceDelta& delta);
  std::string OpenBlock(Block kind, nlohmann::json content_block);
  std::string CloseBlock();
  nlohmann::json Usage() const;
  nlohmann::json StopReason() const;
  nlohmann::json StopSequence() const;
  nlohmann::json Message() const;

  Generation generation_;
  const CompletionParams& params_;
  const std::string model_name_;
  const std::string id_;
  bool started_ = false;
  Block open_ = Block::kNone;
  int block_index_ = -1;  // the last opened block's
};

}  // namespace kvd::server::anthropic
