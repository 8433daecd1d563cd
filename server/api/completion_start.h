// What HTTP and gRPC share for a completion after authentication: resolve the stored document
// a request names, validate every parameter, charge the tenant's limits, submit the prompts.
// One place, so both protocols accept, refuse and count exactly the same requests.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/request_handle.h"
#include "server/api/completion_params.h"
#include "server/api/serving_context.h"
#include "server/auth/tenants.h"
#include "server/metrics/metrics_exporter.h"

namespace kvd::server {

struct StartedCompletion {
  CompletionParams params;
  std::vector<scheduler::RequestHandle> handles;  // one per prompt, in order
  std::unique_ptr<TenantPermit> permit;
};

// The refusal of a request that did not start, and the rejection it counts as (if any).
struct CompletionRefusal {
  absl::Status status;
  std::optional<RejectionReason> rejection;
};

// The stored document a request's `documents` names (at most one id, of the tenant's own), if
// any. InvalidArgument (param "documents") for more than one or when documents are off; the
// document service's errors otherwise, NotFound with code document_not_found.
[[nodiscard]] absl::StatusOr<std::optional<DocumentContext>> ResolveRequestDocument(
    const ServingContext& context, const std::vector<std::string>& documents,
    const std::string& tenant);

// Checks `request` (ResolveCompletionParams), admits it under `tenant`'s limits and submits its
// prompts. On failure nothing is left running and the permit (if taken) is refunded.
[[nodiscard]] std::variant<StartedCompletion, CompletionRefusal> StartCompletion(
    ServingContext& context, Tenant& tenant, const CompletionRequest& request);

// The rejection an error counts as: unauthenticated, a full queue, overload.
std::optional<RejectionReason> RejectionFor(const absl::Status& status);

}  // namespace kvd::server
