// Building Prometheus metric families by hand, for collectors that turn a snapshot into
// families at each scrape.
#pragma once

#include <string>
#include <vector>

#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/metric_type.h"
#include "scheduler/metrics.h"

namespace kvd::server::metric_families {

using Labels = std::vector<prometheus::ClientMetric::Label>;

// `labels` plus name=value.
Labels With(Labels labels, std::string name, std::string value);
prometheus::MetricFamily Family(std::string name, std::string help, prometheus::MetricType type);
// One series of a counter or gauge family.
void AddValue(prometheus::MetricFamily& family, Labels labels, double value);
// A family of one series.
prometheus::MetricFamily Single(std::string name, std::string help, prometheus::MetricType type,
                                const Labels& labels, double value);
// A histogram family of one series; Prometheus buckets are cumulative, the snapshot's are not.
prometheus::MetricFamily Histogram(std::string name, std::string help, const Labels& labels,
                                   const base::HistogramSnapshot& data);

}  // namespace kvd::server::metric_families
