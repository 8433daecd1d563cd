// The Prometheus text behind `GET /metrics`: the scheduler's metrics under vLLM's names (see
// scheduler_collector.h) and the counters the server itself keeps, per tenant.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache_store/store/redis_pool.h"
#include "scheduler/metrics.h"
#include "server/core/constraint_compiler.h"
#include "server/metrics/tenant_labels.h"

namespace prometheus {
class Counter;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace kvd::documents {
struct DocumentStats;
}  // namespace kvd::documents

namespace kvd::server {

class DocumentCollector;
class SchedulerCollector;

// The API a request came through: the `protocol` label, "http" or "grpc".
enum class Protocol { kHttp, kGrpc };

// Why the server refused a request before it reached the scheduler (or the scheduler's queue).
enum class RejectionReason {
  kRateLimit,        // the tenant's request rate limit
  kTokenLimit,       // the tenant's token rate or budget
  kConcurrency,      // the tenant's limit on requests in flight
  kQueueFull,        // the tenant's or the scheduler's waiting queue is full
  kOverloaded,       // the server as a whole sheds load
  kUnauthenticated,  // no or unknown credentials
};

// The `reason` label value: "rate_limit", "token_limit", "concurrency", "queue_full",
// "overloaded" or "unauthenticated".
std::string_view RejectionReasonName(RejectionReason reason);

// Server-kept families (labelled model_name, plus):
//   kvd_tenant_requests_total    counter {tenant, status="2xx|4xx|5xx", protocol="http|grpc"}
//                                        requests answered, by status class (a gRPC call's status
//                                        counts as its HTTP equivalent; 1xx and 3xx appear only
//                                        once used)
//   kvd_tenant_rejections_total  counter {tenant, reason} requests refused, by RejectionReason
// Every tenant × status class and tenant × reason series is present from construction, at 0.
class MetricsExporter {
 public:
  // `snapshot` is called at each scrape (from an I/O thread, so it must be thread-safe);
  // `tenants` bounds the tenant label: any other id is reported as "other".
  MetricsExporter(std::string model_name, std::vector<std::string> tenants,
                  std::function<scheduler::MetricsSnapshot()> snapshot);
  ~MetricsExporter();
  MetricsExporter(const MetricsExporter&) = delete;
  MetricsExporter& operator=(const MetricsExporter&) = delete;

  // Adds the document store's families (document_collector.h), read from `stats` at each
  // scrape. Call before the first Render.
  void AddDocuments(std::function<documents::DocumentStats()> stats);
  // Adds the stored responses' shared-tier families (response_store_families.h), read from
  // `calls` at each scrape (thread-safe; none for a local store). Call before the first Render.
  void AddResponseStore(std::function<std::optional<cache_store::RedisCallStats>()> calls);

  // A request answered with `http_status` (a gRPC call: its status's HTTP equivalent).
  // Thread-safe.
  void RecordRequest(const std::string& tenant, int http_status,
                     Protocol protocol = Protocol::kHttp);
  // A request refused for `reason`. Thread-safe.
  void RecordRejection(const std::string& tenant, RejectionReason reason);

  // Adds the constraint compiler's families, read from `stats` at each scrape (thread-safe):
  //   kvd_constraint_compile_seconds          histogram  compiles that ran, seconds
  //   kvd_constraint_compile_refusals_total   counter    compiles refused for load
  // Call before the first Render.
  void AddConstraintCompiles(std::function<ConstraintCompileStats()> stats);

  // Every family in the text exposition format 0.0.4. Thread-safe.
  std::string Render() const;

  // The Content-Type header of Render's output.
  static constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  TenantLabels tenants_;
  std::string model_name_;
  std::unique_ptr<SchedulerCollector> scheduler_;
  std::unique_ptr<DocumentCollector> documents_;  // null until AddDocuments
  std::function<std::optional<cache_store::RedisCallStats>()> response_store_calls_;
  std::function<ConstraintCompileStats()> constraint_compiles_;  // empty until added
  std::unique_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_;    // owned by registry_
  prometheus::Family<prometheus::Counter>* rejections_;  // owned by registry_
};

}  // namespace kvd::server
