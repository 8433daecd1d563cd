#include "server/api/completion_reply.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/api/openai_json.h"
#include "server/http/error_response.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

std::string RandomId(std::string_view prefix) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  return absl::StrCat(std::string(prefix), absl::Hex(random(), absl::kZeroPad16),
                      absl::Hex(random() >> 32, absl::kZeroPad8));
}

json FinishJson(std::optional<scheduler::FinishReason> finish) {
  return finish ? json(std::string(scheduler::FinishReasonName(*finish))) : json();
}

}  // namespace

CompletionReply::CompletionReply(CompletionParams params,
                                 std::vector<scheduler::RequestHandle> handles,
                                 const engine::Tokenizer& tokenizer, std::string model_name,
                                 std::unique_ptr<TenantPermit> permit,
                                 std::function<void(const ReplyOutcome&)> on_done)
    : params_(std::move(params)),
      handles_(std::move(handles)),
      tokenizer_(tokenizer),
      model_name_(std::move(model_name)),
      permit_(std::move(permit)),
      on_done_(std::move(on_done)),
      id_(RandomId(params_.kind == ApiKind::kChat ? "chatcmpl-" : "cmpl-")),
      created_(absl::ToUnixSeconds(absl::Now())),
      choices_(handles_.size() * static_cast<size_t>(params_.request.n)),
      ended_(handles_.size(), false) {
  if (params_.echo) {
    for (size_t i = 0; i < choices_.size(); ++i) {
      choices_[i].text = params_.prompt_texts[i / params_.request.n];
    }
  }
}

CompletionReply::~CompletionReply() {
  if (!finished_) Finish(499, absl::CancelledError("the client closed the connection"));
}

void CompletionReply::SetNotify(std::function<void()> notify) {
  for (scheduler::RequestHandle& handle : handles_) handle.SetListener(notify);
}

void CompletionReply::Cancel() {
  for (scheduler::RequestHandle& handle : handles_) handle.Cancel();
}

json CompletionReply::Chunk(size_t index, const std::string& text,
                            const std::vector<engine::SampledToken>& logprobs, size_t text_offset,
                            std::optional<scheduler::FinishReason> finish) const {
  json choice = {{"index", index}, {"finish_reason", FinishJson(finish)}};
  const bool with_logprobs =
      params_.kind == ApiKind::kChat ? params_.chat_logprobs : params_.logprobs >= 0;
  if (params_.kind == ApiKind::kChat) {
    choice["delta"] = text.empty() && finish ? json::object() : json{{"content", text}};
    choice["logprobs"] = with_logprobs ? ChatLogprobsJson(tokenizer_, logprobs) : json();
  } else {
    choice["text"] = text;
    choice["logprobs"] =
        with_logprobs ? CompletionLogprobsJson(tokenizer_, logprobs, text_offset) : json();
  }
  json chunk = {
      {"id", id_},
      {"object", params_.kind == ApiKind::kChat ? "chat.completion.chunk" : "text_completion"},
      {"created", created_},
      {"model", model_name_},
      {"choices", json::array({std::move(choice)})}};
  if (params_.include_usage) chunk["usage"] = nullptr;
  return chunk;
}

std::string CompletionReply::StartChunks() const {
  std::string data;
  for (size_t index = 0; index < choices_.size(); ++index) {
    if (params_.kind == ApiKind::kChat) {
      json chunk = Chunk(index, "", {}, 0, std::nullopt);
      chunk["choices"][0]["delta"] = {{"role", "assistant"}, {"content", ""}};
      chunk["choices"][0]["logprobs"] = nullptr;
      data += SseData(chunk);
    } else if (params_.echo) {
      data += SseData(Chunk(index, choices_[index].text, {}, 0, std::nullopt));
    }
  }
  return data;
}

void CompletionReply::Drain(size_t prompt, ReplyProgress& progress) {
  scheduler::RequestHandle& handle = handles_[prompt];
  while (auto event = handle.Next(absl::ZeroDuration())) {
    if (event->final) {
      ended_[prompt] = true;
      usage_.prompt_tokens += event->usage.prompt_tokens;
      usage_.cached_tokens += event->usage.cached_tokens;
      usage_.completion_tokens += event->usage.completion_tokens;
      if (!event->status.ok() && error_.ok()) error_ = event->status;
      return;
    }
    const size_t index =
        prompt * static_cast<size_t>(params_.request.n) + static_cast<size_t>(event->index);
    Choice& choice = choices_[index];
    const size_t offset = choice.text.size();
    choice.text += event->text;
    choice.logprobs.insert(choice.logprobs.end(), event->logprobs.begin(), event->logprobs.end());
    choice.finish = event->finish_reason;
    const bool has_content = !event->text.empty() || !event->logprobs.empty();
    if (params_.stream && (has_content || event->finish_reason)) {
      progress.stream_data +=
          SseData(Chunk(index, event->text, event->logprobs, offset, event->finish_reason));
    }
  }
}

ReplyProgress CompletionReply::Poll() {
  ReplyProgress progress;
  if (finished_) {
    progress.done = true;
    return progress;
  }
  if (params_.stream && !started_) progress.stream_data = StartChunks();
  started_ = true;
  bool all_ended = true;
  for (size_t prompt = 0; prompt < handles_.size(); ++prompt) {
    if (!ended_[prompt]) Drain(prompt, progress);
    all_ended = all_ended && ended_[prompt];
  }
  if (!error_.ok()) {
    Cancel();
    if (params_.stream) {
      progress.stream_data += "data: " + ErrorJson(error_) + "\n\ndata: [DONE]\n\n";
    } else {
      progress.response = ErrorResponse(error_);
    }
    progress.done = true;
    Finish(HttpStatusFor(error_), error_);
    return progress;
  }
  if (!all_ended) return progress;
  if (params_.stream) {
    if (params_.include_usage) {
      progress.stream_data += SseData(
          {{"id", id_},
           {"object", params_.kind == ApiKind::kChat ? "chat.completion.chunk" : "text_completion"},
           {"created", created_},
           {"model", model_name_},
           {"choices", json::array()},
           {"usage", UsageJson(usage_)}});
    }
    progress.stream_data += "data: [DONE]\n\n";
  } else {
    progress.response = HttpResponse{.status = 200, .body = Dump(FullResponse())};
  }
  progress.done = true;
  Finish(200, absl::OkStatus());
  return progress;
}

json CompletionReply::FullResponse() const {
  json choices = json::array();
  for (size_t index = 0; index < choices_.size(); ++index) {
    const Choice& choice = choices_[index];
    json entry = {{"index", index}, {"finish_reason", FinishJson(choice.finish)}};
    if (params_.kind == ApiKind::kChat) {
      entry["message"] = {{"role", "assistant"}, {"content", choice.text}};
      entry["logprobs"] =
          params_.chat_logprobs ? ChatLogprobsJson(tokenizer_, choice.logprobs) : json();
    } else {
      entry["text"] = choice.text;
      const size_t echoed =
          params_.echo ? params_.prompt_texts[index / params_.request.n].size() : 0;
      entry["logprobs"] = params_.logprobs >= 0
                              ? CompletionLogprobsJson(tokenizer_, choice.logprobs, echoed)
                              : json();
    }
    choices.push_back(std::move(entry));
  }
  return {{"id", id_},
          {"object", params_.kind == ApiKind::kChat ? "chat.completion" : "text_completion"},
          {"created", created_},
          {"model", model_name_},
          {"choices", std::move(choices)},
          {"usage", UsageJson(usage_)}};
}

void CompletionReply::Finish(int http_status, absl::Status status) {
  finished_ = true;
  for (scheduler::RequestHandle& handle : handles_) handle.SetListener(nullptr);
  if (permit_) permit_->Settle(usage_.total_tokens());
  if (on_done_) on_done_({http_status, usage_, std::move(status)});
}

}  // namespace kvd::server
