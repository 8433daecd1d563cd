// What every API front end records of a generation request: the request counter by tenant and
// status, the rejection counter, and (with server.log_requests) one log line per request.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/core/generation.h"
#include "server/core/serving_context.h"
#include "server/metrics/metrics_exporter.h"

namespace kvd::server {

// A request refused before it started, answered with `http_status`.
void RecordRefusal(const ServingContext& context, const std::string& method,
                   const std::string& path, const std::string& tenant, const absl::Status& status,
                   int http_status, absl::Time start,
                   std::optional<RejectionReason> rejection = std::nullopt);

// The `on_done` of a started reply: records it. Counts as a reply in flight (for a drain)
// from now until it runs.
std::function<void(const ReplyOutcome&)> ReplyRecorder(ServingContext& context, std::string path,
                                                       std::string tenant, absl::Time start);

}  // namespace kvd::server
