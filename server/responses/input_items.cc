#include "server/responses/input_items.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_details.h"
#include "server/responses/responses_request.h"

namespace kvd::server::responses {
namespace {

using structured::JsonValue;

constexpr int32_t kMaxLimit = 100;

// An input item as the API lists it, from its normalized form (responses_request.h).
JsonValue Listed(const JsonValue& item, std::string id) {
  const std::string type = item.value("type", std::string());
  JsonValue listed = {{"id", std::move(id)}, {"type", type}};
  if (type == "message") {
    const std::string role = item.value("role", std::string());
    const bool output = role == "assistant";
    JsonValue part = {{"type", output ? "output_text" : "input_text"},
                      {"text", item.value("content", std::string())}};
    if (output) part["annotations"] = JsonValue::array();
    listed["role"] = role;
    listed["content"] = JsonValue::array({std::move(part)});
  } else if (type == "function_call") {
    listed["call_id"] = item.value("call_id", std::string());
    listed["name"] = item.value("name", std::string());
    listed["arguments"] = item.value("arguments", std::string());
  } else {
    listed["call_id"] = item.value("call_id", std::string());
    listed["output"] = item.value("output", std::string());
  }
  listed["status"] = "completed";
  return listed;
}

// The item's id: its type's prefix, the response's id and its place.
std::string ItemId(const JsonValue& item, const std::string& response_id, size_t index) {
  const std::string type = item.value("type", std::string());
  const char* prefix = type == "message" ? "msg_" : type == "function_call" ? "fc_" : "fco_";
  const std::string_view response =
      std::string_view(response_id).substr(response_id.starts_with("resp_") ? 5 : 0);
  return absl::StrCat(prefix, std::string(response), "_", index);
}

}  // namespace

absl::StatusOr<InputItemsQuery> ReadInputItemsQuery(
    const std::map<std::string, std::string>& params) {
  InputItemsQuery query;
  for (const auto& [name, value] : params) {
    if (name == "limit") {
      if (!absl::SimpleAtoi(value, &query.limit) || query.limit < 1 || query.limit > kMaxLimit) {
        return InvalidParam("limit", absl::StrCat("'limit' must be an integer in [1, ", kMaxLimit, "]"));
      }
    } else if (name == "order") {
      if (value != "asc" && value != "desc") {
        return InvalidParam("order", "'order' must be 'asc' or 'desc'");
      }
      query.ascending = value == "asc";
    } else if (name == "after") {
      query.after = value;
    } else if (name == "include" || name == "include[]") {
      if (!value.empty()) {
        return InvalidParam("include", "'include' is not supported: kvd keeps no extra output data");
      }
    } else {
      return InvalidParam(name, absl::StrCat("unsupported query parameter '", name, "'"));
    }
  }
  return query;
}

absl::StatusOr<JsonValue> InputItemsPage(const StoredResponse& stored,
                                         const std::string& response_id,
                                         const InputItemsQuery& query) {
  // What the store returned is read as input items are, which it must be.
  auto items = NormalizeItems(stored.conversation, "stored");
  if (!items.ok()) {
    return absl::InternalError(absl::StrCat("the stored response '", response_id,
                                            "' does not read back: ", items.status().message()));
  }
  // The conversation ends with the response's own output items.
  const size_t outputs =
      stored.response.contains("output") && stored.response["output"].is_array()
          ? stored.response["output"].size()
          : 0;
  const size_t inputs = items->size() - std::min(outputs, items->size());
  std::vector<size_t> order(inputs);
  for (size_t i = 0; i < inputs; ++i) order[i] = query.ascending ? i : inputs - 1 - i;
  size_t first = 0;
  if (query.after) {
    const auto at = std::find_if(order.begin(), order.end(), [&](size_t index) {
      return ItemId((*items)[index], response_id, index) == *query.after;
    });
    if (at == order.end()) {
      return InvalidParam("after", absl::StrCat("no input item of response '", response_id,
                                           "' has the id '", *query.after, "'"));
    }
    first = static_cast<size_t>(at - order.begin()) + 1;
  }
  const size_t end = std::min(order.size(), first + static_cast<size_t>(query.limit));
  JsonValue data = JsonValue::array();
  for (size_t k = first; k < end; ++k) {
    const size_t index = order[k];
    data.push_back(Listed((*items)[index], ItemId((*items)[index], response_id, index)));
  }
  return JsonValue{{"object", "list"},
                   {"data", data},
                   {"first_id", data.empty() ? JsonValue() : data.front()["id"]},
                   {"last_id", data.empty() ? JsonValue() : data.back()["id"]},
                   {"has_more", end < order.size()}};
}

}  // namespace kvd::server::responses
