// The document store's metrics as Prometheus families, built from a fresh documents::DocumentStats
// at each scrape.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "documents/document_service.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "server/metrics/tenant_labels.h"

namespace kvd::server {

// Families (every one labelled model_name):
//   kvd_documents                         gauge      documents stored, processing or ready
//   kvd_document_stored_bytes             gauge      bytes of stored caches
//   kvd_tenant_documents                  gauge      {tenant} documents stored, as its quota counts
//   kvd_tenant_document_bytes             gauge      {tenant} bytes of stored caches
//   kvd_document_compressions_running     gauge      compressions queued or running
//   kvd_document_compressions_failed_total  counter  compressions that ended in failure
//   kvd_document_compression_seconds      histogram  upload to stored, seconds
//   kvd_document_kept_ratio               histogram  fraction of entries kept per stored cache
//   kvd_document_load_seconds             histogram  reading a cache from the store, seconds
//   kvd_document_tier_requests_total      counter    {result=hit|miss} memory-tier lookups
//   kvd_document_tier_bytes               gauge      bytes of caches held in memory
//   kvd_document_tier_documents           gauge      caches held in memory
//   kvd_document_remote_enabled           gauge      1 with a shared tier (store.remote)
//   kvd_document_remote_requests_total    counter    {op=read|write} calls to the shared tier
//   kvd_document_remote_lookups_total     counter    {result=hit|miss} cache reads from it
//   kvd_document_remote_failures_total    counter    calls it did not answer or refused
//   kvd_document_remote_bytes_total       counter    {direction=read|written} cache bytes
//   kvd_document_remote_request_seconds   histogram  its round trips, seconds
class DocumentCollector : public prometheus::Collectable {
 public:
  // `stats` is called once per Collect, from the scraping thread; it must be thread-safe.
  DocumentCollector(std::string model_name, TenantLabels tenants,
                    std::function<documents::DocumentStats()> stats);

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  void AddSharedTier(const std::optional<cache_store::RemoteStoreStats>& remote,
                     std::vector<prometheus::MetricFamily>& out) const;

  std::vector<prometheus::ClientMetric::Label> labels_;  // model_name
  TenantLabels tenants_;
  std::function<documents::DocumentStats()> stats_;
};

}  // namespace kvd::server
