// The reply to a (chat) completion request: a generation's output (generation.h) shaped as
// OpenAI does — one JSON response, or server-sent events with the role first, finish reasons,
// an optional usage chunk and `data: [DONE]`; errors after the 200 go in-band. With tools, the
// calls stream as `delta.tool_calls`: id and name first, then argument fragments. A scored
// prompt streams as one chunk per choice ahead of its generated text, once the prompt's
// logprobs are known: the echoed text with them (completions), and vLLM's prompt_logprobs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "scheduler/request_handle.h"
#include "server/auth/tenants.h"
#include "server/core/completion_params.h"
#include "server/core/generation.h"
#include "server/http/http_message.h"
#include "text/tokenizer.h"

namespace kvd::server {

class CompletionReply final : public AsyncReply {
 public:
  // One handle per prompt, in order. `tokenizer` is borrowed. `on_done` runs once, when the
  // reply ends or is dropped.
  CompletionReply(CompletionParams params, std::vector<scheduler::RequestHandle> handles,
                  const text::Tokenizer& tokenizer, std::string model_name,
                  std::unique_ptr<TenantPermit> permit,
                  std::function<void(const ReplyOutcome&)> on_done);
  ~CompletionReply() override;

  bool streaming() const override { return params_.stream; }
  void SetNotify(std::function<void()> notify) override;
  ReplyProgress Poll() override;
  void Cancel() override;

 private:
  // A delta of choice `delta.choice` as a chunk, or null when it holds nothing to send.
  nlohmann::json DeltaChunk(const ChoiceDelta& delta) const;
  nlohmann::json FinishJson(const ChoiceOutput& choice,
                            std::optional<scheduler::FinishReason> finish) const;
  std::string StartChunks() const;
  // Whether the prompt is scored (echo with logprobs, prompt_logprobs), so that an echo waits
  // for the scores.
  bool ScoresPrompt() const { return params_.request.prompt_logprobs.has_value(); }
  // Choice `index`'s scored prompt as a chunk; null for a chat choice after the first (chat
  // lists its one prompt's logprobs once).
  nlohmann::json PromptChunk(size_t index) const;
  // `body`: chat's delta object, or completions' text.
  nlohmann::json Chunk(size_t index, nlohmann::json body,
                       const std::vector<engine::SampledToken>& logprobs, size_t text_offset,
                       nlohmann::json finish) const;
  nlohmann::json FullResponse() const;

  Generation generation_;
  const CompletionParams& params_;
  const text::Tokenizer& tokenizer_;
  const std::string model_name_;
  const std::string id_;
  const int64_t created_;
  bool started_ = false;
  std::vector<bool> prompt_sent_;  // by choice, while ScoresPrompt() in a stream
};

}  // namespace kvd::server
