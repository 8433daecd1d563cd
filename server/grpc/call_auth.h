// The first check of every gRPC call, as request_auth.h is for HTTP: not while draining, and
// the caller's tenant from its `authorization: Bearer <key>` metadata.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>

#include "absl/status/statusor.h"
#include "server/auth/tenants.h"
#include "server/core/serving_context.h"

namespace kvd::server {

// Unavailable (with retry-after) while draining; Unauthenticated for a missing or unknown key.
[[nodiscard]] absl::StatusOr<std::shared_ptr<Tenant>> AuthenticateCall(
    const ServingContext& context, const grpc::ServerContextBase& call);

}  // namespace kvd::server
