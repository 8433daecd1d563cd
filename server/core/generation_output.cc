#include "server/core/generation_output.h"

#include <utility>

#include "base/check.h"
#include "server/openai/openai_json.h"

namespace kvd::server {

bool ChoiceDelta::empty() const {
  return token_ids.empty() && text.empty() && calls.empty() && logprobs.empty() && !finish;
}

GenerationOutput::GenerationOutput(size_t choices,
                                   std::optional<structured::ToolCallSyntax> tool_syntax,
                                   std::string_view call_id_prefix)
    : choices_(choices), tool_syntax_(tool_syntax), call_id_prefix_(call_id_prefix) {
  if (!tool_syntax_) return;
  for (Choice& choice : choices_) choice.tool_stream.emplace(*tool_syntax_);
}

void GenerationOutput::Prepend(size_t choice, const std::string& text) {
  KVD_CHECK(choice < choices_.size());
  choices_[choice].output.text.insert(0, text);
}

ChoiceDelta GenerationOutput::Take(size_t index, const scheduler::Event& event) {
  KVD_CHECK(index < choices_.size() && !event.final);
  Choice& choice = choices_[index];
  ChoiceOutput& output = choice.output;
  ChoiceDelta delta;
  delta.choice = index;
  delta.token_ids = event.token_ids;
  delta.text = event.text;
  delta.text_offset = output.text.size();
  delta.logprobs = event.logprobs;
  delta.finish = event.finish_reason;
  delta.stop_string = event.stop_string;
  output.text += event.text;
  output.logprobs.insert(output.logprobs.end(), event.logprobs.begin(), event.logprobs.end());
  if (!event.prompt_logprobs.empty()) output.prompt_logprobs = event.prompt_logprobs;
  if (event.finish_reason) {
    output.finish = event.finish_reason;
    output.stop_string = event.stop_string;
  }
  if (!choice.tool_stream) {
    delta.content = event.text;
    output.content += event.text;
    return delta;
  }
  structured::ParsedOutput parsed = choice.tool_stream->Feed(event.text);
  if (event.finish_reason) {
    structured::ParsedOutput rest = choice.tool_stream->Finish();
    parsed.content += rest.content;
    parsed.calls.insert(parsed.calls.end(), rest.calls.begin(), rest.calls.end());
  }
  delta.content = parsed.content;
  output.content += parsed.content;
  for (structured::ToolCallFragment& fragment : parsed.calls) {
    ToolCallDelta& call = delta.calls.emplace_back();
    call.index = fragment.index;
    if (!fragment.name.empty()) {
      output.calls.push_back({RandomId(call_id_prefix_), fragment.name, ""});
      call.id = output.calls.back().id;
      call.name = std::move(fragment.name);
    }
    KVD_CHECK(static_cast<size_t>(fragment.index) + 1 == output.calls.size());
    output.calls.back().arguments += fragment.arguments;
    call.arguments = std::move(fragment.arguments);
  }
  return delta;
}

}  // namespace kvd::server
