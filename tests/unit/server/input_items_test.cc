// GET /v1/responses/{id}/input_items' pages: the items before the response's own output, with
// ids that stay the same from call to call, read back as input items first, newest first unless asked, `after` and `limit`
// paging through them, and every bad query parameter named.
#include "server/responses/input_items.h"

#include <gtest/gtest.h>

#include "base/status_details.h"

namespace kvd::server::responses {
namespace {

using structured::JsonValue;

StoredResponse Conversation() {
  StoredResponse stored;
  stored.response = JsonValue::parse(R"({"id": "resp_abc", "output": [{"type": "message"}]})");
  stored.conversation = JsonValue::parse(R"([
    {"type": "message", "role": "user", "content": "What is the weather?"},
    {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    {"type": "message", "role": "assistant", "content": "Sunny."},
    {"type": "message", "role": "user", "content": "Thanks"},
    {"type": "message", "role": "assistant", "content": "You are welcome."}])");
  return stored;
}

std::vector<std::string> Ids(const JsonValue& page) {
  std::vector<std::string> ids;
  for (const JsonValue& item : page["data"]) ids.push_back(item["id"].get<std::string>());
  return ids;
}

TEST(InputItemsTest, ListsTheInputNewestFirstWithStableIds) {
  auto page = InputItemsPage(Conversation(), "resp_abc", {});
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(Ids(*page),
            (std::vector<std::string>{"msg_abc_4", "msg_abc_3", "fco_abc_2", "fc_abc_1",
                                      "msg_abc_0"}))
      << "the response's own output is not an input";
  EXPECT_EQ((*page)["object"], "list");
  EXPECT_EQ((*page)["first_id"], "msg_abc_4");
  EXPECT_EQ((*page)["last_id"], "msg_abc_0");
  EXPECT_EQ((*page)["has_more"], false);
  const JsonValue& data = (*page)["data"];
  EXPECT_EQ(data[4], JsonValue::parse(R"({"id": "msg_abc_0", "type": "message", "role": "user",
      "content": [{"type": "input_text", "text": "What is the weather?"}],
      "status": "completed"})"));
  EXPECT_EQ(data[1]["content"][0],
            JsonValue::parse(R"({"type": "output_text", "text": "Sunny.", "annotations": []})"));
  EXPECT_EQ(data[3], JsonValue::parse(R"({"id": "fc_abc_1", "type": "function_call",
      "call_id": "call_1", "name": "get_weather", "arguments": "{}", "status": "completed"})"));
  EXPECT_EQ(data[2], JsonValue::parse(R"({"id": "fco_abc_2", "type": "function_call_output",
      "call_id": "call_1", "output": "sunny", "status": "completed"})"));
}

TEST(InputItemsTest, PagesWithAfterAndLimitInEitherOrder) {
  InputItemsQuery query{.limit = 2, .ascending = true};
  std::vector<std::string> all;
  bool more = true;
  while (more) {
    auto page = InputItemsPage(Conversation(), "resp_abc", query);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const std::string& id : Ids(*page)) all.push_back(id);
    more = (*page)["has_more"].get<bool>();
    query.after = (*page)["last_id"].get<std::string>();
  }
  EXPECT_EQ(all, (std::vector<std::string>{"msg_abc_0", "fc_abc_1", "fco_abc_2", "msg_abc_3",
                                           "msg_abc_4"}));
  auto empty = InputItemsPage(Conversation(), "resp_abc", {.after = "msg_abc_0"});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE((*empty)["data"].empty());
  EXPECT_TRUE((*empty)["first_id"].is_null());
  auto unknown = InputItemsPage(Conversation(), "resp_abc", {.after = "msg_abc_5"});
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParamOf(unknown.status()), "after");
}

// What the store returned is hostile until read as input items (a shared tier's Redis may hold
// anything): a conversation that does not read back is an error, never a crash.
TEST(InputItemsTest, AConversationThatDoesNotReadBackIsAnError) {
  StoredResponse stored = Conversation();
  stored.conversation[0]["content"] = JsonValue::parse(R"({"id": "resp_abc"})");
  EXPECT_EQ(InputItemsPage(stored, "resp_abc", {}).status().code(), absl::StatusCode::kInternal);
  stored.conversation = JsonValue::parse(R"({"not": "an array"})");
  EXPECT_EQ(InputItemsPage(stored, "resp_abc", {}).status().code(), absl::StatusCode::kInternal);
}

TEST(InputItemsTest, ReadsTheQueryAndNamesEveryBadParameter) {
  auto query = ReadInputItemsQuery({{"limit", "3"}, {"order", "asc"}, {"after", "msg_x_1"}});
  ASSERT_TRUE(query.ok()) << query.status();
  EXPECT_EQ(query->limit, 3);
  EXPECT_TRUE(query->ascending);
  EXPECT_EQ(query->after, "msg_x_1");
  const std::pair<std::map<std::string, std::string>, std::string> bad[] = {
      {{{"limit", "0"}}, "limit"},        {{{"limit", "101"}}, "limit"},
      {{{"limit", "x"}}, "limit"},        {{{"order", "up"}}, "order"},
      {{{"include", "x"}}, "include"},    {{{"before", "msg_x_1"}}, "before"}};
  for (const auto& [params, param] : bad) {
    auto refused = ReadInputItemsQuery(params);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << param;
    EXPECT_EQ(ParamOf(refused.status()), param);
  }
}

}  // namespace
}  // namespace kvd::server::responses
