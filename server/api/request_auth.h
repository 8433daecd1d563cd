// The first check of every API request: not while draining, and the caller's tenant from its
// `Authorization: Bearer` key.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "server/api/serving_context.h"
#include "server/auth/tenants.h"
#include "server/http/http_message.h"

namespace kvd::server {

// Unavailable (with Retry-After) while draining; Unauthenticated for a missing or unknown key.
[[nodiscard]] absl::StatusOr<std::shared_ptr<Tenant>> AuthenticateRequest(
    const ServingContext& context, const HttpRequest& request);

}  // namespace kvd::server
