#include "documents/document_metrics.h"

#include <vector>

namespace kvd::documents {
namespace {

std::vector<double> SecondsBuckets() {
  return {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
}

std::vector<double> RatioBuckets() { return {0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9, 1.0}; }

}  // namespace

DocumentMetrics::DocumentMetrics()
    : compression_seconds_(SecondsBuckets()),
      load_seconds_(SecondsBuckets()),
      kept_ratio_(RatioBuckets()) {}

void DocumentMetrics::ObserveCompression(double seconds, double kept_ratio) {
  base::MutexLock lock(mu_);
  compression_seconds_.Observe(seconds);
  kept_ratio_.Observe(kept_ratio);
}

void DocumentMetrics::ObserveRecut(double kept_ratio) {
  base::MutexLock lock(mu_);
  kept_ratio_.Observe(kept_ratio);
}

void DocumentMetrics::ObserveLoad(double seconds) {
  base::MutexLock lock(mu_);
  load_seconds_.Observe(seconds);
}

void DocumentMetrics::CountFailure() {
  base::MutexLock lock(mu_);
  ++compressions_failed_;
}

DocumentMetricsSnapshot DocumentMetrics::Snapshot() const {
  base::MutexLock lock(mu_);
  return {compressions_failed_, compression_seconds_.snapshot(), load_seconds_.snapshot(),
          kept_ratio_.snapshot()};
}

}  // namespace kvd::documents
