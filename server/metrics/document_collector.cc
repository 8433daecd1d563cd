#include "server/metrics/document_collector.h"

#include <map>
#include <utility>

#include "server/metrics/metric_families.h"

namespace kvd::server {

using metric_families::AddValue;
using metric_families::Family;
using metric_families::Histogram;
using metric_families::Single;
using metric_families::With;
using prometheus::MetricFamily;
using prometheus::MetricType;

DocumentCollector::DocumentCollector(std::string model_name, TenantLabels tenants,
                                     std::function<documents::DocumentStats()> stats)
    : labels_{{"model_name", std::move(model_name)}},
      tenants_(std::move(tenants)),
      stats_(std::move(stats)) {}

// The shared tier's traffic (store.remote); zeros without one, so that dashboards and alerts
// find every family on every replica.
void DocumentCollector::AddSharedTier(const std::optional<cache_store::RemoteStoreStats>& remote,
                                      std::vector<MetricFamily>& out) const {
  const cache_store::RemoteStoreStats s = remote.value_or(cache_store::RemoteStoreStats{});
  const auto counter = MetricType::Counter;
  out.push_back(Single("kvd_document_remote_enabled",
                       "1 when a shared document tier (store.remote) is configured.",
                       MetricType::Gauge, labels_, remote ? 1.0 : 0.0));
  MetricFamily requests = Family("kvd_document_remote_requests_total",
                                 "Calls to the shared document tier, by kind (calls).", counter);
  AddValue(requests, With(labels_, "op", "read"), static_cast<double>(s.reads));
  AddValue(requests, With(labels_, "op", "write"), static_cast<double>(s.writes));
  out.push_back(std::move(requests));
  MetricFamily lookups =
      Family("kvd_document_remote_lookups_total",
             "Reads of a document's cache from the shared tier, by result (lookups).", counter);
  AddValue(lookups, With(labels_, "result", "hit"), static_cast<double>(s.hits));
  AddValue(lookups, With(labels_, "result", "miss"), static_cast<double>(s.misses));
  out.push_back(std::move(lookups));
  out.push_back(Single("kvd_document_remote_failures_total",
                       "Calls the shared document tier did not answer or refused (calls).",
                       counter, labels_, static_cast<double>(s.failures)));
  MetricFamily bytes = Family("kvd_document_remote_bytes_total",
                              "Cache bytes moved to and from the shared tier (bytes).", counter);
  AddValue(bytes, With(labels_, "direction", "read"), static_cast<double>(s.bytes_read));
  AddValue(bytes, With(labels_, "direction", "written"), static_cast<double>(s.bytes_written));
  out.push_back(std::move(bytes));
  out.push_back(Histogram(
      "kvd_document_remote_request_seconds", "Round trips to the shared document tier (seconds).",
      labels_,
      remote ? s.seconds : base::Histogram(cache_store::RemoteLatencyBuckets()).snapshot()));
}

std::vector<MetricFamily> DocumentCollector::Collect() const {
  const documents::DocumentStats s = stats_();
  const auto gauge = MetricType::Gauge;
  const auto counter = MetricType::Counter;
  std::vector<MetricFamily> out;
  out.push_back(Single("kvd_documents", "Documents stored, processing or ready (documents).", gauge,
                       labels_, static_cast<double>(s.documents)));
  out.push_back(Single("kvd_document_stored_bytes", "Bytes of stored document caches (bytes).",
                       gauge, labels_, static_cast<double>(s.stored_bytes)));

  // Per tenant, ids outside the configured ones summed under "other".
  std::map<std::string, documents::TenantDocuments> tenants;
  for (const std::string& tenant : tenants_.values()) tenants[tenant];
  for (const auto& [id, usage] : s.tenants) {
    documents::TenantDocuments& total = tenants[tenants_.Of(id)];
    total.documents += usage.documents;
    total.bytes += usage.bytes;
  }
  MetricFamily documents =
      Family("kvd_tenant_documents",
             "Documents the tenant stores, processing or ready (documents).", gauge);
  MetricFamily bytes =
      Family("kvd_tenant_document_bytes", "Bytes of the tenant's stored caches (bytes).", gauge);
  for (const auto& [tenant, usage] : tenants) {
    AddValue(documents, With(labels_, "tenant", tenant), static_cast<double>(usage.documents));
    AddValue(bytes, With(labels_, "tenant", tenant), static_cast<double>(usage.bytes));
  }
  out.push_back(std::move(documents));
  out.push_back(std::move(bytes));

  out.push_back(Single("kvd_document_compressions_running",
                       "Document compressions queued or running (documents).", gauge, labels_,
                       static_cast<double>(s.compressions_running)));
  out.push_back(Single("kvd_document_compressions_failed_total",
                       "Document compressions that ended in failure (documents).", counter, labels_,
                       static_cast<double>(s.metrics.compressions_failed)));
  out.push_back(Histogram("kvd_document_compression_seconds",
                          "Time from upload to a stored compressed cache (seconds).", labels_,
                          s.metrics.compression_seconds));
  out.push_back(Histogram("kvd_document_kept_ratio",
                          "Fraction of document KV entries kept per stored cache (ratio).", labels_,
                          s.metrics.kept_ratio));
  out.push_back(Histogram("kvd_document_load_seconds",
                          "Time to read and check a cache from the store on a memory-tier miss "
                          "(seconds).",
                          labels_, s.metrics.load_seconds));
  MetricFamily tier =
      Family("kvd_document_tier_requests_total",
             "Memory-tier lookups of document caches, by result (lookups).", counter);
  AddValue(tier, With(labels_, "result", "hit"), static_cast<double>(s.tier.hits));
  AddValue(tier, With(labels_, "result", "miss"), static_cast<double>(s.tier.misses));
  out.push_back(std::move(tier));
  out.push_back(Single("kvd_document_tier_bytes",
                       "Bytes of document caches held in memory "
                       "(bytes).",
                       gauge, labels_, static_cast<double>(s.tier.bytes)));
  out.push_back(Single("kvd_document_tier_documents", "Document caches held in memory (documents).",
                       gauge, labels_, static_cast<double>(s.tier.documents)));
  AddSharedTier(s.remote, out);
  return out;
}

}  // namespace kvd::server
