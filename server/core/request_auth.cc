#include "server/core/request_auth.h"

#include "server/http/error_response.h"

namespace kvd::server {

absl::StatusOr<std::shared_ptr<Tenant>> AuthenticateRequest(const ServingContext& context,
                                                            const HttpRequest& request,
                                                            KeyHeaders headers) {
  if (context.draining.load()) {
    return WithRetryAfter(absl::UnavailableError("the server is shutting down"), 1);
  }
  const std::string& api_key = request.header("x-api-key");
  if (headers == KeyHeaders::kBearerOrXApiKey && !api_key.empty() &&
      request.header("authorization").empty()) {
    return context.tenants->current()->Authenticate("Bearer " + api_key);
  }
  return context.tenants->current()->Authenticate(request.header("authorization"));
}

}  // namespace kvd::server
