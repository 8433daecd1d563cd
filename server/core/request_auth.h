// The first check of every API request: not while draining, and the caller's tenant from its
// `Authorization: Bearer` key (or, on Anthropic's routes, its `x-api-key`).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "server/auth/tenants.h"
#include "server/core/serving_context.h"
#include "server/http/http_message.h"

namespace kvd::server {

// Which headers may carry the key.
enum class KeyHeaders {
  kBearer,           // Authorization: Bearer <key>
  kBearerOrXApiKey,  // also x-api-key: <key>, as Anthropic's clients send it
};

// Unavailable (with Retry-After) while draining; Unauthenticated for a missing or unknown key.
[[nodiscard]] absl::StatusOr<std::shared_ptr<Tenant>> AuthenticateRequest(
    const ServingContext& context, const HttpRequest& request,
    KeyHeaders headers = KeyHeaders::kBearer);

}  // namespace kvd::server
