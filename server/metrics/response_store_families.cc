#include "server/metrics/response_store_families.h"

#include "base/histogram.h"

namespace kvd::server {

using metric_families::AddValue;
using metric_families::Family;
using metric_families::Histogram;
using metric_families::Single;
using metric_families::With;
using prometheus::MetricType;

void AddResponseStoreFamilies(const metric_families::Labels& labels,
                              const std::optional<cache_store::RedisCallStats>& calls,
                              std::vector<prometheus::MetricFamily>& out) {
  const cache_store::RedisCallStats s = calls.value_or(cache_store::RedisCallStats{});
  prometheus::MetricFamily requests = Family(
      "kvd_response_store_remote_requests_total",
      "Calls of the stored responses to the shared tier, by kind (calls).", MetricType::Counter);
  AddValue(requests, With(labels, "op", "read"), static_cast<double>(s.reads));
  AddValue(requests, With(labels, "op", "write"), static_cast<double>(s.writes));
  out.push_back(std::move(requests));
  out.push_back(Single("kvd_response_store_remote_failures_total",
                       "Calls of the stored responses the shared tier did not answer or refused "
                       "(calls).",
                       MetricType::Counter, labels, static_cast<double>(s.failures)));
  out.push_back(Histogram(
      "kvd_response_store_remote_request_seconds",
      "Round trips of the stored responses to the shared tier (seconds).", labels,
      calls ? s.seconds : base::Histogram(cache_store::RemoteLatencyBuckets()).snapshot()));
}

}  // namespace kvd::server
