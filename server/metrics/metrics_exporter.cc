#include "server/metrics/metrics_exporter.h"

#include <utility>

#include "base/enum_names.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "server/metrics/document_collector.h"
#include "server/metrics/metric_families.h"
#include "server/metrics/response_store_families.h"
#include "server/metrics/scheduler_collector.h"

namespace kvd::server {
namespace {

constexpr RejectionReason kRejectionReasons[] = {
    RejectionReason::kRateLimit, RejectionReason::kTokenLimit, RejectionReason::kConcurrency,
    RejectionReason::kQueueFull, RejectionReason::kOverloaded, RejectionReason::kUnauthenticated,
};

// "2xx" for 200..299 and so on; anything outside 100..599 is a server fault, "5xx".
std::string StatusClass(int http_status) {
  if (http_status < 100 || http_status > 599) return "5xx";
  return std::to_string(http_status / 100) + "xx";
}

}  // namespace

namespace {

constexpr auto kRejectionReasonNames = base::MakeEnumNames<RejectionReason>({
    {RejectionReason::kRateLimit, "rate_limit"},
    {RejectionReason::kTokenLimit, "token_limit"},
    {RejectionReason::kConcurrency, "concurrency"},
    {RejectionReason::kQueueFull, "queue_full"},
    {RejectionReason::kOverloaded, "overloaded"},
    {RejectionReason::kUnauthenticated, "unauthenticated"},
});

}  // namespace

std::string_view RejectionReasonName(RejectionReason reason) {
  return kRejectionReasonNames.Name(reason);
}

MetricsExporter::MetricsExporter(std::string model_name, std::vector<std::string> tenants,
                                 std::function<scheduler::MetricsSnapshot()> snapshot)
    : tenants_(tenants),
      model_name_(model_name),
      scheduler_(std::make_unique<SchedulerCollector>(model_name, TenantLabels(tenants),
                                                      std::move(snapshot))),
      registry_(std::make_unique<prometheus::Registry>()),
      requests_(&prometheus::BuildCounter()
                     .Name("kvd_tenant_requests_total")
                     .Help("Requests answered, by tenant, status class and protocol "
                           "(requests).")
                     .Labels({{"model_name", model_name}})
                     .Register(*registry_)),
      rejections_(&prometheus::BuildCounter()
                       .Name("kvd_tenant_rejections_total")
                       .Help("Requests refused before scheduling, by tenant and reason "
                             "(requests).")
                       .Labels({{"model_name", model_name}})
                       .Register(*registry_)) {
  // Series exist at 0 before their first event, so rate() and absent() see them.
  for (const std::string& tenant : tenants_.values()) {
    for (const char* status : {"2xx", "4xx", "5xx"}) {
      for (const char* protocol : {"http", "grpc"}) {
        requests_->Add({{"tenant", tenant}, {"status", status}, {"protocol", protocol}});
      }
    }
    for (RejectionReason reason : kRejectionReasons) {
      rejections_->Add({{"tenant", tenant}, {"reason", std::string(RejectionReasonName(reason))}});
    }
  }
}

MetricsExporter::~MetricsExporter() = default;

void MetricsExporter::AddDocuments(std::function<documents::DocumentStats()> stats) {
  documents_ = std::make_unique<DocumentCollector>(model_name_, tenants_, std::move(stats));
}

void MetricsExporter::AddResponseStore(
    std::function<std::optional<cache_store::RedisCallStats>()> calls) {
  response_store_calls_ = std::move(calls);
}

void MetricsExporter::AddConstraintCompiles(std::function<ConstraintCompileStats()> stats) {
  constraint_compiles_ = std::move(stats);
}

void MetricsExporter::RecordRequest(const std::string& tenant, int http_status, Protocol protocol) {
  // Family::Add is thread-safe and returns the existing series for known labels.
  requests_
      ->Add({{"tenant", tenants_.Of(tenant)},
             {"status", StatusClass(http_status)},
             {"protocol", protocol == Protocol::kGrpc ? "grpc" : "http"}})
      .Increment();
}

void MetricsExporter::RecordRejection(const std::string& tenant, RejectionReason reason) {
  rejections_
      ->Add({{"tenant", tenants_.Of(tenant)}, {"reason", std::string(RejectionReasonName(reason))}})
      .Increment();
}

std::string MetricsExporter::Render() const {
  std::vector<prometheus::MetricFamily> families = scheduler_->Collect();
  if (documents_ != nullptr) {
    for (prometheus::MetricFamily& family : documents_->Collect()) {
      families.push_back(std::move(family));
    }
  }
  if (response_store_calls_) {
    AddResponseStoreFamilies({{"model_name", model_name_}}, response_store_calls_(), families);
  }
  if (constraint_compiles_) {
    const ConstraintCompileStats compiles = constraint_compiles_();
    const metric_families::Labels labels = {{"model_name", model_name_}};
    families.push_back(metric_families::Histogram(
        "kvd_constraint_compile_seconds",
        "Structured-output constraints compiled on the compile threads, successful or not "
        "(seconds).",
        labels, compiles.seconds));
    families.push_back(metric_families::Single(
        "kvd_constraint_compile_refusals_total",
        "Constraint compiles refused for load: over a tenant's limit, or waiting past the "
        "timeout (compiles).",
        prometheus::MetricType::Counter, labels, static_cast<double>(compiles.refused)));
  }
  for (prometheus::MetricFamily& family : registry_->Collect()) {
    families.push_back(std::move(family));
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace kvd::server
