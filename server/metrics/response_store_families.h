// The stored responses' traffic to the shared tier as Prometheus families, from the store's
// call counts at each scrape; zeros for a local store, so that dashboards and alerts find every
// family on every replica.
#pragma once

#include <optional>
#include <vector>

#include "cache_store/store/redis_pool.h"
#include "prometheus/metric_family.h"
#include "server/metrics/metric_families.h"

namespace kvd::server {

// Families (every one labelled model_name):
//   kvd_response_store_remote_requests_total   counter    {op=read|write} calls to the shared tier
//   kvd_response_store_remote_failures_total   counter    calls it did not answer or refused
//   kvd_response_store_remote_request_seconds  histogram  its round trips, seconds
void AddResponseStoreFamilies(const metric_families::Labels& labels,
                              const std::optional<cache_store::RedisCallStats>& calls,
                              std::vector<prometheus::MetricFamily>& out);

}  // namespace kvd::server
