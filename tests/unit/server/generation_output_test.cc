// A generation's output as the front ends read it: deltas in order with their offsets, the
// echoed prompt ahead of the text, and with tools the text split into content and calls whose
// first piece carries the id (with the front end's prefix) and the name.
#include "server/core/generation_output.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvd::server {
namespace {

scheduler::Event TextEvent(std::string text,
                           std::optional<scheduler::FinishReason> finish = std::nullopt) {
  scheduler::Event event;
  event.text = std::move(text);
  event.token_ids = {1};
  event.finish_reason = finish;
  return event;
}

TEST(GenerationOutputTest, DeltasCarryTextOffsetsAndTheFinish) {
  GenerationOutput output(2, std::nullopt);
  output.Prepend(1, "Prompt: ");
  ChoiceDelta first = output.Take(1, TextEvent("Hello"));
  EXPECT_EQ(first.choice, 1u);
  EXPECT_EQ(first.text_offset, 8u);
  EXPECT_EQ(first.content, "Hello");
  scheduler::Event last = TextEvent(" world", scheduler::FinishReason::kStop);
  last.stop_string = "\n";
  ChoiceDelta second = output.Take(1, last);
  EXPECT_EQ(second.text_offset, 13u);
  EXPECT_EQ(second.finish, scheduler::FinishReason::kStop);
  EXPECT_EQ(output.choice(1).text, "Prompt: Hello world");
  EXPECT_EQ(output.choice(1).content, "Hello world");
  EXPECT_EQ(output.choice(1).stop_string, "\n");
  EXPECT_TRUE(output.choice(0).text.empty());
  EXPECT_FALSE(output.choice(0).finish.has_value());
  EXPECT_FALSE(output.parses_tools());
}

TEST(GenerationOutputTest, ToolCallsAreSplitFromContentWithIds) {
  GenerationOutput output(1, structured::ToolCallSyntax::kHermes, "toolu_");
  const std::string text =
      "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"
      "\n</tool_call>";
  std::vector<ChoiceDelta> deltas;
  for (size_t at = 0; at < text.size(); at += 7) {
    const bool last = at + 7 >= text.size();
    deltas.push_back(output.Take(
        0, TextEvent(text.substr(at, 7),
                     last ? std::optional(scheduler::FinishReason::kStop) : std::nullopt)));
  }
  std::string content;
  std::string arguments;
  std::vector<ToolCallDelta> starts;
  for (const ChoiceDelta& delta : deltas) {
    content += delta.content;
    for (const ToolCallDelta& call : delta.calls) {
      EXPECT_EQ(call.index, 0);
      if (!call.id.empty()) starts.push_back(call);
      arguments += call.arguments;
    }
  }
  EXPECT_EQ(content, "Checking.");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].name, "get_weather");
  EXPECT_EQ(starts[0].id.rfind("toolu_", 0), 0u);
  EXPECT_EQ(arguments, "{\"city\": \"Paris\"}");
  const ChoiceOutput& choice = output.choice(0);
  ASSERT_EQ(choice.calls.size(), 1u);
  EXPECT_EQ(choice.calls[0].id, starts[0].id);
  EXPECT_EQ(choice.calls[0].arguments, arguments);
  EXPECT_EQ(choice.text, text);
  EXPECT_EQ(choice.content, "Checking.");
  EXPECT_EQ(deltas.back().finish, scheduler::FinishReason::kStop);
}

}  // namespace
}  // namespace kvd::server
