#include "server/grpc/call_auth.h"

#include <string>

#include "server/http/error_response.h"

namespace kvd::server {

absl::StatusOr<std::shared_ptr<Tenant>> AuthenticateCall(const ServingContext& context,
                                                         const grpc::ServerContextBase& call) {
  if (context.draining.load()) {
    return WithRetryAfter(absl::UnavailableError("the server is shutting down"), 1);
  }
  std::string authorization;
  const auto& metadata = call.client_metadata();
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    authorization.assign(it->second.data(), it->second.size());
  }
  return context.tenants->current()->Authenticate(authorization);
}

}  // namespace kvd::server
