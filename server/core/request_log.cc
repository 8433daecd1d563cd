#include "server/core/request_log.h"

#include "absl/time/clock.h"
#include "spdlog/spdlog.h"

namespace kvd::server {

void RecordRefusal(const ServingContext& context, const std::string& method,
                   const std::string& path, const std::string& tenant, const absl::Status& status,
                   int http_status, absl::Time start, std::optional<RejectionReason> rejection) {
  if (context.metrics != nullptr) {
    context.metrics->RecordRequest(tenant, http_status);
    if (rejection) context.metrics->RecordRejection(tenant, *rejection);
  }
  if (context.log_requests) {
    spdlog::info("{} {} tenant={} status={} {:.3f}s {}", method, path, tenant, http_status,
                 absl::ToDoubleSeconds(absl::Now() - start), std::string(status.message()));
  }
}

std::function<void(const ReplyOutcome&)> ReplyRecorder(ServingContext& context, std::string path,
                                                       std::string tenant, absl::Time start) {
  const bool log = context.log_requests;
  MetricsExporter* metrics = context.metrics;
  std::atomic<int32_t>* in_flight = &context.replies_in_flight;
  in_flight->fetch_add(1);
  return [path = std::move(path), tenant = std::move(tenant), start, log, metrics,
          in_flight](const ReplyOutcome& outcome) {
    in_flight->fetch_sub(1);
    if (metrics != nullptr) metrics->RecordRequest(tenant, outcome.http_status);
    if (!log) return;
    spdlog::info("POST {} tenant={} status={} prompt_tokens={} completion_tokens={} {:.3f}s{}",
                 path, tenant, outcome.http_status, outcome.usage.prompt_tokens,
                 outcome.usage.completion_tokens, absl::ToDoubleSeconds(absl::Now() - start),
                 outcome.status.ok() ? "" : " " + std::string(outcome.status.message()));
  };
}

}  // namespace kvd::server
