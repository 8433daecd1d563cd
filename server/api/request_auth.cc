#include "server/api/request_auth.h"

#include "server/http/error_response.h"

namespace kvd::server {

absl::StatusOr<std::shared_ptr<Tenant>> AuthenticateRequest(const ServingContext& context,
                                                            const HttpRequest& request) {
  if (context.draining.load()) {
    return WithRetryAfter(absl::UnavailableError("the server is shutting down"), 1);
  }
  return context.tenants->current()->Authenticate(request.header("authorization"));
}

}  // namespace kvd::server
