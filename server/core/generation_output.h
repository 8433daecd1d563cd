// A request's output in the one typed form every front end serializes (OpenAI's completions
// and chat over HTTP, Anthropic's messages, gRPC): each scheduler event of a choice becomes a
// delta of content text, tool-call starts and argument fragments, logprobs and the finish,
// and each choice's whole output is kept for replies sent at the end. With tools, the text is
// parsed into content and calls as it arrives (structured/tool_call_syntax.h), and every call
// gets its id here, once, whatever the wire format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/sampling.h"
#include "scheduler/request.h"
#include "structured/tool_call_syntax.h"

namespace kvd::server {

struct ToolCallOutput {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text, complete once the choice finished by itself
};

// A piece of a tool call: its first carries id and name.
struct ToolCallDelta {
  int32_t index = 0;  // the call's position in the choice's output
  std::string id;     // first piece only
  std::string name;   // first piece only
  std::string arguments;
};

struct ChoiceDelta {
  size_t choice = 0;
  std::vector<int32_t> token_ids;
  std::string text;        // the text released, calls included (completions' `text`)
  size_t text_offset = 0;  // where `text` begins in the choice's whole text
  std::string content;     // the text outside tool calls (all of `text` without tools)
  std::vector<ToolCallDelta> calls;
  std::vector<engine::SampledToken> logprobs;
  std::optional<scheduler::FinishReason> finish;
  std::string stop_string;  // the stop string that finished the choice

  // Nothing a client would see: no tokens, text, calls or finish.
  bool empty() const;
};

struct ChoiceOutput {
  std::string text;     // everything generated (after the echoed prompt, when echoed)
  std::string content;  // without tools: the text
  std::vector<ToolCallOutput> calls;
  std::vector<engine::SampledToken> logprobs;
  // With an echoed or scored prompt: one per prompt token after the first.
  std::vector<engine::SampledToken> prompt_logprobs;
  std::optional<scheduler::FinishReason> finish;
  std::string stop_string;
};

class GenerationOutput {
 public:
  // `choices` outputs; with `tool_syntax`, each parsed for calls whose ids start with
  // `call_id_prefix` ("call_" as OpenAI's, "toolu_" as Anthropic's).
  GenerationOutput(size_t choices, std::optional<structured::ToolCallSyntax> tool_syntax,
                   std::string_view call_id_prefix = "call_");

  // Takes in a (non-final) event of choice `choice`; what it adds.
  ChoiceDelta Take(size_t choice, const scheduler::Event& event);
  // Puts `text` ahead of choice `choice`'s output (an echoed prompt).
  void Prepend(size_t choice, const std::string& text);

  size_t size() const { return choices_.size(); }
  const ChoiceOutput& choice(size_t index) const { return choices_[index].output; }
  bool parses_tools() const { return tool_syntax_.has_value(); }

 private:
  struct Choice {
    ChoiceOutput output;
    std::optional<structured::ToolCallStream> tool_stream;
  };

  std::vector<Choice> choices_;
  std::optional<structured::ToolCallSyntax> tool_syntax_;
  std::string call_id_prefix_;
};

}  // namespace kvd::server
