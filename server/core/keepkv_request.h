// A completion request's KeepKV fields (CompletionRequest::keepkv, docs/api.md, KeepKV) over its
// tenant's defaults: whether KeepKV runs for the request and with which parameters.
#pragma once

#include <optional>

#include "absl/status/statusor.h"
#include "cache_store/keepkv/keepkv_params.h"
#include "server/config/keepkv_config.h"
#include "server/core/completion_request.h"

namespace kvd::server {

// None given: the tenant's default (`defaults`, on when defaults.enabled). Disabled: off. Fields
// given: on, each over `defaults`. None when off. InvalidArgument naming the field as the param
// ("keepkv.alpha") for a bad value, or "keepkv.disabled" for disabled with fields.
// protected_prefix is left 0: the caller knows the prompt.
[[nodiscard]] absl::StatusOr<std::optional<cache_store::KeepKvParams>> ResolveKeepKv(
    const std::optional<KeepKvRequest>& request, const KeepKvConfig& defaults);

}  // namespace kvd::server
