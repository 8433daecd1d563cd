// GET /v1/responses/{id}/input_items: the items a stored response was generated from (the
// conversation it continued and its own input, oldest first), as OpenAI lists them: each item
// with an id derived from the response's id and the item's place (the same on every call), in
// pages of `limit` after the item `after`, newest first unless
// `order=asc`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "server/responses/response_store.h"
#include "structured/json_rules.h"

namespace kvd::server::responses {

struct InputItemsQuery {
  int32_t limit = 20;  // [1, 100]
  bool ascending = false;
  std::optional<std::string> after;  // an item id of the list
};

// The query's parameters: `limit`, `order` (asc, desc), `after`, and `include` empty; anything
// else is InvalidArgument naming the parameter.
[[nodiscard]] absl::StatusOr<InputItemsQuery> ReadInputItemsQuery(
    const std::map<std::string, std::string>& params);

// The page `query` asks for of `stored`'s input items: {"object": "list", "data", "first_id",
// "last_id", "has_more"}. InvalidArgument naming `after` when no input item has that id;
// Internal when the stored conversation does not read back as input items.
[[nodiscard]] absl::StatusOr<structured::JsonValue> InputItemsPage(
    const StoredResponse& stored, const std::string& response_id, const InputItemsQuery& query);

}  // namespace kvd::server::responses
