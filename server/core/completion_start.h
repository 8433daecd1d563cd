// What HTTP and gRPC share for a completion after authentication: resolve the stored document
// a request names, validate every parameter, charge the tenant's limits, submit the prompts.
// One place, so both protocols accept, refuse and count exactly the same requests.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/request_handle.h"
#include "server/auth/tenants.h"
#include "server/core/completion_params.h"
#include "server/core/serving_context.h"
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

using CompletionStart = std::variant<StartedCompletion, CompletionRefusal>;

// Checks `request` (ResolveCompletionParams), admits it under `tenant`'s limits and submits its
// prompts; on failure nothing is left running and the permit (if taken) is refunded. Never
// blocks the caller on the document store: a request that names a stored document (at most
// one, of the tenant's own) resolves it on the documents' request workers and starts there.
// `done` runs once: on that worker, or at once on the caller's thread when the request names
// no document or its `documents` is refused outright (InvalidArgument, param "documents", for
// more than one or when documents are off; a missing document is NotFound with code
// document_not_found).
void StartCompletion(ServingContext& context, std::shared_ptr<Tenant> tenant,
                     CompletionRequest request, std::function<void(CompletionStart)> done);

// The rejection an error counts as: unauthenticated, a full queue, overload.
std::optional<RejectionReason> RejectionFor(const absl::Status& status);

}  // namespace kvd::server
