// The documents' histograms and failure count, observed by the writer, the resolver and
// re-cuts, and read by the metrics exporter. Thread-safe.
#pragma once

#include <cstdint>

#include "base/histogram.h"
#include "base/mutex.h"

namespace kvd::documents {

struct DocumentMetricsSnapshot {
  int64_t compressions_failed = 0;
  base::HistogramSnapshot compression_seconds;  // upload to stored, per document
  base::HistogramSnapshot load_seconds;         // store read on a tier miss
  base::HistogramSnapshot kept_ratio;           // ratio of each stored document
};

class DocumentMetrics {
 public:
  DocumentMetrics();

  void ObserveCompression(double seconds, double kept_ratio);
  void ObserveRecut(double kept_ratio);
  void ObserveLoad(double seconds);
  void CountFailure();

  DocumentMetricsSnapshot Snapshot() const;

 private:
  mutable base::Mutex mu_;
  int64_t compressions_failed_ ABSL_GUARDED_BY(mu_) = 0;
  base::Histogram compression_seconds_ ABSL_GUARDED_BY(mu_);
  base::Histogram load_seconds_ ABSL_GUARDED_BY(mu_);
  base::Histogram kept_ratio_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvd::documents
