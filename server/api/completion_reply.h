// The reply to a (chat) completion request: drains the scheduler's event streams of its
// prompts and shapes them as OpenAI does — one JSON response, or server-sent events with the
// role first, finish reasons, an optional usage chunk and `data: [DONE]`; errors after the 200
// go in-band. With tools, each output is parsed as it arrives into content and `tool_calls`
// (streamed as `delta.tool_calls`: id and name first, then argument fragments).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/tokenizer.h"
#include "nlohmann/json.hpp"
#include "scheduler/request_handle.h"
#include "server/api/completion_params.h"
#include "server/auth/tenants.h"
#include "server/http/http_message.h"
#include "structured/tool_call_syntax.h"

namespace kvd::server {

// How a reply ended, for request logs and metrics.
struct ReplyOutcome {
  int http_status = 200;  // the error's status for failures; 499 when the client went away
  scheduler::Usage usage;
  absl::Status status;
};

class CompletionReply final : public AsyncReply {
 public:
  // One handle per prompt, in order. `tokenizer` is borrowed. `on_done` runs once, when the
  // reply ends or is dropped.
  CompletionReply(CompletionParams params, std::vector<scheduler::RequestHandle> handles,
                  const engine::Tokenizer& tokenizer, std::string model_name,
                  std::unique_ptr<TenantPermit> permit,
                  std::function<void(const ReplyOutcome&)> on_done);
  ~CompletionReply() override;

  bool streaming() const override { return params_.stream; }
  void SetNotify(std::function<void()> notify) override;
  ReplyProgress Poll() override;
  void Cancel() override;

 private:
  struct ToolCall {
    std::string id;
    std::string name;
    std::string arguments;
  };
  struct Choice {
    std::string text;
    std::vector<engine::SampledToken> logprobs;
    // With an echoed prompt's logprobs: one per prompt token after the first.
    std::vector<engine::SampledToken> prompt_logprobs;
    std::optional<scheduler::FinishReason> finish;
    // With tools: the text parsed into content and calls as it arrives.
    std::optional<structured::ToolCallStream> tool_stream;
    std::string content;
    std::vector<ToolCall> calls;
  };

  void Drain(size_t prompt, ReplyProgress& progress);
  // Takes in a parsed piece of choice `choice`'s output; its chat delta.
  nlohmann::json TakeToolOutput(Choice& choice, const structured::ParsedOutput& parsed) const;
  nlohmann::json FinishJson(const Choice& choice,
                            std::optional<scheduler::FinishReason> finish) const;
  std::string StartChunks() const;
  // `body`: chat's delta object, or completions' text.
  nlohmann::json Chunk(size_t index, nlohmann::json body,
                       const std::vector<engine::SampledToken>& logprobs, size_t text_offset,
                       nlohmann::json finish) const;
  nlohmann::json FullResponse() const;
  void Finish(int http_status, absl::Status status);

  const CompletionParams params_;
  std::vector<scheduler::RequestHandle> handles_;
  const engine::Tokenizer& tokenizer_;
  const std::string model_name_;
  std::unique_ptr<TenantPermit> permit_;
  std::function<void(const ReplyOutcome&)> on_done_;
  const std::string id_;
  const int64_t created_;

  std::vector<Choice> choices_;  // prompt-major: prompt p, completion c is p * n + c
  std::vector<bool> ended_;      // per prompt: its final event arrived
  scheduler::Usage usage_;
  absl::Status error_;
  bool started_ = false;
  bool finished_ = false;
};

}  // namespace kvd::server
