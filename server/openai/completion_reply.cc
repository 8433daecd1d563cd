#include "server/openai/completion_reply.h"

#include "absl/time/clock.h"
#include "server/http/error_response.h"
#include "server/openai/openai_json.h"

namespace kvd::server {

using json = nlohmann::json;

CompletionReply::CompletionReply(CompletionParams params,
                                 std::vector<scheduler::RequestHandle> handles,
                                 const text::Tokenizer& tokenizer, std::string model_name,
                                 std::unique_ptr<TenantPermit> permit,
                                 std::function<void(const ReplyOutcome&)> on_done)
    : generation_(std::move(params), std::move(handles), std::move(permit), std::move(on_done)),
      params_(generation_.params()),
      tokenizer_(tokenizer),
      model_name_(std::move(model_name)),
      id_(RandomId(params_.kind == ApiKind::kChat ? "chatcmpl-" : "cmpl-")),
      created_(absl::ToUnixSeconds(absl::Now())),
      prompt_sent_(generation_.output().size(), false) {}

CompletionReply::~CompletionReply() = default;

void CompletionReply::SetNotify(std::function<void()> notify) {
  generation_.SetNotify(std::move(notify));
}

void CompletionReply::Cancel() { generation_.Cancel(); }

json CompletionReply::FinishJson(const ChoiceOutput& choice,
                                 std::optional<scheduler::FinishReason> finish) const {
  if (!finish) return json();
  // Calls the model chose to make end its turn; a named choice is the caller's (OpenAI: stop).
  if (*finish == scheduler::FinishReason::kStop && !choice.calls.empty() &&
      !params_.named_tool_choice) {
    return "tool_calls";
  }
  return std::string(scheduler::FinishReasonName(*finish));
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
  for (size_t index = 0; index < generation_.output().size(); ++index) {
    if (params_.kind == ApiKind::kChat) {
      json chunk = Chunk(index, {{"role", "assistant"}, {"content", ""}}, {}, 0, json());
      chunk["choices"][0]["logprobs"] = nullptr;
      data += SseData(chunk);
    } else if (params_.echo && !ScoresPrompt()) {
      data += SseData(Chunk(index, generation_.output().choice(index).text, {}, 0, json()));
    }
  }
  return data;
}

json CompletionReply::PromptChunk(size_t index) const {
  const ChoiceOutput& choice = generation_.output().choice(index);
  const size_t prompt = index / params_.request.n;
  if (params_.kind == ApiKind::kChat) {
    if (index != 0) return json();
    json chunk = Chunk(index, json::object(), {}, 0, json());
    chunk["choices"][0]["logprobs"] = nullptr;
    chunk["prompt_logprobs"] =
        PromptLogprobsJson(tokenizer_, params_.prompts[prompt], choice.prompt_logprobs);
    return chunk;
  }
  const std::string echoed = params_.echo ? params_.prompt_texts[prompt] : std::string();
  json chunk = Chunk(index, echoed, {}, 0, json());
  json& entry = chunk["choices"][0];
  entry["logprobs"] = params_.echo && params_.logprobs >= 0
                          ? EchoedLogprobsJson(tokenizer_, params_.prompts[prompt],
                                               choice.prompt_logprobs, {}, echoed.size())
                          : json();
  if (params_.prompt_logprobs) {
    entry["prompt_logprobs"] =
        PromptLogprobsJson(tokenizer_, params_.prompts[prompt], choice.prompt_logprobs);
  }
  return chunk;
}

json CompletionReply::DeltaChunk(const ChoiceDelta& delta) const {
  json body;
  if (params_.kind == ApiKind::kCompletion) {
    body = delta.text;
  } else {
    body = json::object();
    if (!delta.content.empty() || (!params_.tool_syntax && !delta.finish)) {
      body["content"] = delta.content;
    }
    if (!delta.calls.empty()) {
      json calls = json::array();
      for (const ToolCallDelta& piece : delta.calls) {
        json call = {{"index", piece.index}};
        if (!piece.id.empty()) {
          call["id"] = piece.id;
          call["type"] = "function";
          call["function"] = {{"name", piece.name}, {"arguments", piece.arguments}};
        } else {
          call["function"] = {{"arguments", piece.arguments}};
        }
        calls.push_back(std::move(call));
      }
      body["tool_calls"] = std::move(calls);
    }
  }
  const bool has_content = !delta.logprobs.empty() || !delta.calls.empty() ||
                           (params_.tool_syntax ? !delta.content.empty() : !delta.text.empty());
  if (!has_content && !delta.finish) return json();
  return Chunk(delta.choice, std::move(body), delta.logprobs, delta.text_offset,
               FinishJson(generation_.output().choice(delta.choice), delta.finish));
}

ReplyProgress CompletionReply::Poll() {
  ReplyProgress progress;
  if (generation_.finished()) {
    progress.done = true;
    return progress;
  }
  if (params_.stream && !started_) progress.stream_data = StartChunks();
  started_ = true;
  std::vector<ChoiceDelta> deltas;
  const bool ended = generation_.Drain(deltas);
  if (params_.stream) {
    for (const ChoiceDelta& delta : deltas) {
      // The first delta of a choice brings its prompt's scores.
      if (ScoresPrompt() && !prompt_sent_[delta.choice]) {
        prompt_sent_[delta.choice] = true;
        json prompt = PromptChunk(delta.choice);
        if (!prompt.is_null()) progress.stream_data += SseData(prompt);
      }
      json chunk = DeltaChunk(delta);
      if (!chunk.is_null()) progress.stream_data += SseData(chunk);
    }
  }
  if (!ended) return progress;
  const absl::Status error = generation_.error();
  if (!error.ok()) {
    if (params_.stream) {
      progress.stream_data += "data: " + ErrorJson(error) + "\n\ndata: [DONE]\n\n";
    } else {
      progress.response = ErrorResponse(error);
    }
    progress.done = true;
    generation_.Finish(HttpStatusFor(error), error);
    return progress;
  }
  if (params_.stream) {
    if (params_.include_usage) {
      progress.stream_data += SseData(
          {{"id", id_},
           {"object", params_.kind == ApiKind::kChat ? "chat.completion.chunk" : "text_completion"},
           {"created", created_},
           {"model", model_name_},
           {"choices", json::array()},
           {"usage", UsageJson(generation_.usage())}});
    }
    progress.stream_data += "data: [DONE]\n\n";
  } else {
    progress.response = HttpResponse{.status = 200, .body = Dump(FullResponse())};
  }
  progress.done = true;
  generation_.Finish(200, absl::OkStatus());
  return progress;
}

json CompletionReply::FullResponse() const {
  const GenerationOutput& output = generation_.output();
  json choices = json::array();
  for (size_t index = 0; index < output.size(); ++index) {
    const ChoiceOutput& choice = output.choice(index);
    json entry = {{"index", index}, {"finish_reason", FinishJson(choice, choice.finish)}};
    if (params_.kind == ApiKind::kChat) {
      entry["message"] = {{"role", "assistant"}, {"content", choice.text}};
      if (params_.tool_syntax) {
        json& message = entry["message"];
        message["content"] =
            choice.content.empty() && !choice.calls.empty() ? json() : json(choice.content);
        if (!choice.calls.empty()) {
          json calls = json::array();
          for (const ToolCallOutput& call : choice.calls) {
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
      const size_t prompt = index / params_.request.n;
      if (params_.prompt_logprobs) {
        entry["prompt_logprobs"] =
            PromptLogprobsJson(tokenizer_, params_.prompts[prompt], choice.prompt_logprobs);
      }
      entry["text"] = choice.text;
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
      {"usage", UsageJson(generation_.usage())}};
  // Chat has one prompt: vLLM lists its logprobs beside the choices.
  if (params_.prompt_logprobs && params_.kind == ApiKind::kChat && output.size() > 0) {
    response["prompt_logprobs"] =
        PromptLogprobsJson(tokenizer_, params_.prompts[0], output.choice(0).prompt_logprobs);
  }
  return response;
}

}  // namespace kvd::server
