// A completion request's `keepkv` (docs/api.md, KeepKV) over its tenant's defaults: whether
// KeepKV runs for the request and with which parameters.
#pragma once

#include <optional>

#include "absl/status/statusor.h"
#include "cache_store/keepkv/keepkv_params.h"
#include "nlohmann/json.hpp"
#include "server/config/keepkv_config.h"

namespace kvd::server {

// `body`'s "keepkv": absent, the tenant's default (`defaults`, on when defaults.enabled);
// null, off; an object, on, its keys (budget, alpha, window, refresh_every, recent, method)
// over `defaults`, a null key counting as absent. None when off. InvalidArgument naming the
// key as the param ("keepkv.alpha") for a bad value, an unknown key or a non-object.
// protected_prefix is left 0: the caller knows the prompt.
[[nodiscard]] absl::StatusOr<std::optional<cache_store::KeepKvParams>> ParseKeepKvRequest(
    const nlohmann::json& body, const KeepKvConfig& defaults);

}  // namespace kvd::server
