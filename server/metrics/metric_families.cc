#include "server/metrics/metric_families.h"

#include <limits>
#include <utility>

namespace kvd::server::metric_families {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

Labels With(Labels labels, std::string name, std::string value) {
  labels.push_back({std::move(name), std::move(value)});
  return labels;
}

MetricFamily Family(std::string name, std::string help, MetricType type) {
  MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

void AddValue(MetricFamily& family, Labels labels, double value) {
  ClientMetric metric;
  metric.label = std::move(labels);
  if (family.type == MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
}

MetricFamily Single(std::string name, std::string help, MetricType type, const Labels& labels,
                    double value) {
  MetricFamily family = Family(std::move(name), std::move(help), type);
  AddValue(family, labels, value);
  return family;
}

MetricFamily Histogram(std::string name, std::string help, const Labels& labels,
                       const base::HistogramSnapshot& data) {
  MetricFamily family = Family(std::move(name), std::move(help), MetricType::Histogram);
  ClientMetric metric;
  metric.label = labels;
  metric.histogram.sample_count = data.count;
  metric.histogram.sample_sum = data.sum;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < data.bounds.size(); ++i) {
    if (i < data.counts.size()) cumulative += data.counts[i];
    metric.histogram.bucket.push_back({cumulative, data.bounds[i]});
  }
  metric.histogram.bucket.push_back({data.count, std::numeric_limits<double>::infinity()});
  family.metric.push_back(std::move(metric));
  return family;
}

}  // namespace kvd::server::metric_families
