// ParseBoundedJson: the nesting limit holds while parsing, at any depth the input has, without
// building (or recursing into) the deep part.
#include "text/bounded_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace kvd::text {
namespace {

std::string Nested(int depth, char open, char close) {
  return std::string(static_cast<size_t>(depth), open) +
         std::string(static_cast<size_t>(depth), close);
}

TEST(BoundedJsonTest, AcceptsUpToTheLimit) {
  auto parsed = ParseBoundedJson(Nested(kMaxJsonDepth, '[', ']'), "input");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto object = ParseBoundedJson(R"({"a": {"b": [1, 2, {"c": null}]}})", "input");
  ASSERT_TRUE(object.ok());
  EXPECT_EQ((*object)["a"]["b"][2], nlohmann::json({{"c", nullptr}}));
}

TEST(BoundedJsonTest, RefusesDeeperNestingAtAnyDepth) {
  for (int depth : {kMaxJsonDepth + 1, 10000, 1000000}) {
    auto arrays = ParseBoundedJson(Nested(depth, '[', ']'), "the body");
    ASSERT_FALSE(arrays.ok()) << depth;
    EXPECT_EQ(arrays.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(arrays.status().message().find("the body nests"), std::string::npos);
    std::string objects;
    for (int i = 0; i < depth; ++i) objects += "{\"a\":";
    objects += "1" + std::string(static_cast<size_t>(depth), '}');
    EXPECT_FALSE(ParseBoundedJson(objects, "the body").ok()) << depth;
  }
  // Deep inside an otherwise shallow object, as a request's field would be.
  const std::string body =
      R"({"messages": [{"role": "user", "content": )" + Nested(200000, '[', ']') + "}]}";
  EXPECT_FALSE(ParseBoundedJson(body, "the body").ok());
}

TEST(BoundedJsonTest, InvalidJsonSaysSo) {
  auto parsed = ParseBoundedJson("{\"a\": ", "config.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(std::string(parsed.status().message()),
              testing::StartsWith("config.json is not valid JSON: [json.exception.parse_error"));
  EXPECT_FALSE(ParseBoundedJson(Nested(100, '[', ']') + "x", "x").ok());
}

TEST(BoundedJsonTest, ObjectsKeepTheirOrderAndARepeatedKeyKeepsItsPlaceAndLastValue) {
  const auto ordered = ParseBoundedJson<nlohmann::ordered_json>(
      R"({"b": 1, "a": [2, {"z": 0, "y": 1}], "b": 3})", "input");
  ASSERT_TRUE(ordered.ok()) << ordered.status();
  EXPECT_EQ(ordered->dump(), R"({"b":3,"a":[2,{"z":0,"y":1}]})");
  const auto sorted = ParseBoundedJson(R"({"b": 1, "a": 2, "b": 3})", "input");
  ASSERT_TRUE(sorted.ok());
  EXPECT_EQ(sorted->dump(), R"({"a":2,"b":3})");
  EXPECT_EQ(ParseBoundedJson(R"("text")", "input")->get<std::string>(), "text");
}

// An object of many keys, as a hostile body sends: every key kept, in order, each found once
// (built in time linear in the keys; docs/benchmarks.md).
TEST(BoundedJsonTest, AWideObjectKeepsEveryKeyInOrder) {
  constexpr int kKeys = 200000;
  std::string text = "{";
  for (int i = 0; i < kKeys; ++i) {
    text += (i == 0 ? "\"" : ",\"") + std::to_string(kKeys - i) + "\":" + std::to_string(i);
  }
  text += ",\"7\":-1}";
  const auto parsed = ParseBoundedJson<nlohmann::ordered_json>(text, "the body");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), static_cast<size_t>(kKeys));
  EXPECT_EQ(parsed->begin().key(), std::to_string(kKeys));
  EXPECT_EQ((*parsed)["7"], -1);
  EXPECT_EQ((*parsed)["1"], kKeys - 1);
}

}  // namespace
}  // namespace kvd::text
