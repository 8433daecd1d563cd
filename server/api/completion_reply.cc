#include "server/api/completion_reply.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/check.h"
#include "server/api/openai_json.h"
#include "server/http/error_response.h"

namespace kvd::server {

using json = nlohmann::json;

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
  if (params_.tool_syntax) {
    for (Choice& choice : choices_) choice.tool_stream.emplace(*params_.tool_syntax);
  }
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

json CompletionReply::FinishJson(const Choice& choice,
                                 std::optional<scheduler::FinishReason> finish) const {
  if (!finish) return json();
  // Calls the model chose to make end its turn; a named choice is the caller's (OpenAI: stop).
  if (*finish == scheduler::FinishReason::kStop && !choice.calls.empty() &&
      !params_.named_tool_choice) {
    return "tool_calls";
  }
  return std::string(scheduler::FinishReasonName(*finish));
}

json CompletionReply::TakeToolOutput(Choice& choice, const structured::ParsedOutput& parsed) const {
  json delta = json::object();
  if (!parsed.content.empty()) delta["content"] = parsed.content;
  choice.content += parsed.content;
  json calls = json::array();
  for (const structured::ToolCallFragment& fragment : parsed.calls) {
    json call = {{"index", fragment.index}};
    if (!fragment.name.empty()) {
      choice.calls.push_back({RandomId("call_"), fragment.name, ""});
      call["id"] = choice.calls.back().id;
      call["type"] = "function";
      call["function"] = {{"name", fragment.name}, {"arguments", fragment.arguments}};
    } else {
      call["function"] = {{"arguments", fragment.arguments}};
    }
    KVD_CHECK(static_cast<size_t>(fragment.index) + 1 == choice.calls.size());
    choice.calls.back().arguments += fragment.arguments;
    calls.push_back(std::move(call));
  }
  if (!calls.empty()) delta["tool_calls"] = std::move(calls);
  return delta;
}

json CompletionReply::Chunk(size_t index, json body,
                            const std::vector<engine::SampledToken>& logprobs, size_t text_offset,
                            json finish) const {
  json choice = {{"index", index}, {"finish_reason", std::move(finish)}};
  const bool with_logprobs =
      params_.kind == ApiKind::kChat ? params_.chat_logprobs : params_.logprobs >= 0;
  if (params_.kind == ApiKind::kChat) {
    choice["delta"] = std::move(body);
    choice["logprobs"] = with_logprobs ? ChatLogprobsJson(tokenizer_, logprobs) : json();
  } else {
    choice["text"] = std::move(body);
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
      json chunk = Chunk(index, {{"role", "assistant"}, {"content", ""}}, {}, 0, json());
      chunk["choices"][0]["logprobs"] = nullptr;
      data += SseData(chunk);
    } else if (params_.echo) {
      data += SseData(Chunk(index, choices_[index].text, {}, 0, json()));
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
    if (!event->prompt_logprobs.empty()) choice.prompt_logprobs = event->prompt_logprobs;
    choice.finish = event->finish_reason;
    json body;
    bool has_content = !event->logprobs.empty();
    if (choice.tool_stream) {
      structured::ParsedOutput parsed = choice.tool_stream->Feed(event->text);
      if (event->finish_reason) {
        structured::ParsedOutput rest = choice.tool_stream->Finish();
        parsed.content += rest.content;
        parsed.calls.insert(parsed.calls.end(), rest.calls.begin(), rest.calls.end());
      }
      body = TakeToolOutput(choice, parsed);
      has_content = has_content || !body.empty();
    } else {
      has_content = has_content || !event->text.empty();
      const bool chat = params_.kind == ApiKind::kChat;
      body = !chat                                         ? json(event->text)
             : event->text.empty() && event->finish_reason ? json::object()
                                                           : json{{"content", event->text}};
    }
    if (params_.stream && (has_content || event->finish_reason)) {
      progress.stream_data += SseData(Chunk(index, std::move(body), event->logprobs, offset,
                                            FinishJson(choice, event->finish_reason)));
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
    json entry = {{"index", index}, {"finish_reason", FinishJson(choice, choice.finish)}};
    if (params_.kind == ApiKind::kChat) {
      entry["message"] = {{"role", "assistant"}, {"content", choice.text}};
      if (choice.tool_stream) {
        json& message = entry["message"];
        message["content"] =
            choice.content.empty() && !choice.calls.empty() ? json() : json(choice.content);
        if (!choice.calls.empty()) {
          json calls = json::array();
          for (const ToolCall& call : choice.calls) {
            calls.push_back({{"id", call.id},
                             {"type", "function"},
                             {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
          }
          message["tool_calls"] = std::move(calls);
        }
      }
      entry["logprobs"] =
          params_.chat_logprobs ? ChatLogprobsJson(tokenizer_, choice.logprobs) : json();
    } else {
      if (params_.prompt_logprobs) {
        entry["prompt_logprobs"] = PromptLogprobsJson(
            tokenizer_, params_.prompts[index / params_.request.n], choice.prompt_logprobs);
      }
      entry["text"] = choice.text;
      const size_t prompt = index / params_.request.n;
      const size_t echoed = params_.echo ? params_.prompt_texts[prompt].size() : 0;
      if (params_.logprobs < 0) {
        entry["logprobs"] = json();
      } else if (params_.request.prompt_logprobs) {
        entry["logprobs"] = EchoedLogprobsJson(tokenizer_, params_.prompts[prompt],
                                               choice.prompt_logprobs, choice.logprobs, echoed);
      } else {
        entry["logprobs"] = CompletionLogprobsJson(tokenizer_, choice.logprobs, echoed);
      }
    }
    choices.push_back(std::move(entry));
  }
  json response = {
      {"id", id_},
      {"object", params_.kind == ApiKind::kChat ? "chat.completion" : "text_completion"},
      {"created", created_},
      {"model", model_name_},
      {"choices", std::move(choices)},
      {"usage", UsageJson(usage_)}};
  // Chat has one prompt: vLLM lists its logprobs beside the choices.
  if (params_.prompt_logprobs && params_.kind == ApiKind::kChat && !choices_.empty()) {
    response["prompt_logprobs"] =
        PromptLogprobsJson(tokenizer_, params_.prompts[0], choices_[0].prompt_logprobs);
  }
  return response;
}

void CompletionReply::Finish(int http_status, absl::Status status) {
  finished_ = true;
  for (scheduler::RequestHandle& handle : handles_) handle.SetListener(nullptr);
  if (permit_) permit_->Settle(usage_.total_tokens());
  if (on_done_) on_done_({http_status, usage_, std::move(status)});
}

}  // namespace kvd::server
