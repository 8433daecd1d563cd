#include "scheduler/metrics.h"

#include <algorithm>

#include "base/mutex.h"

namespace kvd::scheduler {
namespace {

// Bucket bounds of vLLM's histograms of the same meaning.
std::vector<double> LatencyBuckets() {
  return {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
          30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}
std::vector<double> FirstTokenBuckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}
std::vector<double> InterTokenBuckets() {
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
          0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
}
std::vector<double> TokensPerStepBuckets() {
  return {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
}
std::vector<double> StepBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0};
}

}  // namespace

SchedulerMetrics::SchedulerMetrics()
    : tokens_per_step_(TokensPerStepBuckets()),
      step_seconds_(StepBuckets()),
      queue_seconds_(LatencyBuckets()),
      ttft_seconds_(FirstTokenBuckets()),
      itl_seconds_(InterTokenBuckets()),
      e2e_seconds_(LatencyBuckets()) {}

void SchedulerMetrics::RecordGauges(const Gauges& gauges) {
  base::MutexLock lock(mu_);
  totals_.num_running = gauges.num_running;
  totals_.num_waiting = gauges.num_waiting;
  totals_.kv_blocks_total = gauges.kv_blocks_total;
  totals_.kv_blocks_free = gauges.kv_blocks_free;
  totals_.kv_usage =
      gauges.kv_blocks_total == 0
          ? 0.0
          : 1.0 - static_cast<double>(gauges.kv_blocks_free) / gauges.kv_blocks_total;
  totals_.keepkv_sequences = gauges.keepkv_sequences;
  totals_.keepkv_compressed_fraction = gauges.keepkv_compressed_fraction;
  totals_.prefix_cache_blocks = gauges.prefix_cache_blocks;
  for (auto& [tenant, stats] : totals_.tenants) stats.running = stats.waiting = 0;
  for (const auto& [tenant, current] : gauges.tenants) {
    TenantStats& stats = totals_.tenants[tenant];
    stats.running = current.running;
    stats.waiting = current.waiting;
  }
}

void SchedulerMetrics::RecordKeepKv(int64_t merges, int64_t evictions, int64_t refreshes) {
  base::MutexLock lock(mu_);
  totals_.keepkv_merges += static_cast<uint64_t>(merges);
  totals_.keepkv_evictions += static_cast<uint64_t>(evictions);
  totals_.keepkv_refreshes += static_cast<uint64_t>(refreshes);
}

void SchedulerMetrics::RecordPrefixCache(const std::string& tenant, int32_t queried,
                                         int32_t hits) {
  base::MutexLock lock(mu_);
  totals_.prefix_cache_queries += static_cast<uint64_t>(queried);
  totals_.prefix_cache_hits += static_cast<uint64_t>(hits);
  TenantStats& stats = totals_.tenants[tenant];
  stats.prefix_cache_queries += static_cast<uint64_t>(queried);
  stats.prefix_cache_hits += static_cast<uint64_t>(hits);
}

void SchedulerMetrics::RecordStep(int32_t tokens, int32_t preemptions, double step_seconds,
                                  double forward_seconds) {
  base::MutexLock lock(mu_);
  ++totals_.steps;
  totals_.preemptions += static_cast<uint64_t>(preemptions);
  totals_.computed_tokens += static_cast<uint64_t>(tokens);
  totals_.step_seconds_total += step_seconds;
  totals_.forward_seconds_total += forward_seconds;
  if (tokens > 0) {
    tokens_per_step_.Observe(tokens);
    step_seconds_.Observe(step_seconds);
  }
}

void SchedulerMetrics::RecordAdmission(const std::string& tenant, int32_t prompt_tokens,
                                       double queue_seconds) {
  base::MutexLock lock(mu_);
  totals_.prompt_tokens += static_cast<uint64_t>(prompt_tokens);
  totals_.tenants[tenant].prompt_tokens += static_cast<uint64_t>(prompt_tokens);
  queue_seconds_.Observe(queue_seconds);
}

void SchedulerMetrics::RecordToken(const std::string& tenant,
                                   std::optional<double> time_to_first_token,
                                   std::optional<double> inter_token) {
  base::MutexLock lock(mu_);
  ++totals_.generation_tokens;
  ++totals_.tenants[tenant].generation_tokens;
  if (time_to_first_token) ttft_seconds_.Observe(*time_to_first_token);
  if (inter_token) itl_seconds_.Observe(*inter_token);
}

void SchedulerMetrics::RecordFinish(FinishReason reason) {
  base::MutexLock lock(mu_);
  ++totals_.finished_sequences[reason];
}

void SchedulerMetrics::RecordRequestDone(double e2e_seconds) {
  base::MutexLock lock(mu_);
  e2e_seconds_.Observe(e2e_seconds);
}

void SchedulerMetrics::RecordConstrainedRequest() {
  base::MutexLock lock(mu_);
  ++totals_.constrained_requests;
}

void SchedulerMetrics::RecordConstraintMask(double seconds) {
  base::MutexLock lock(mu_);
  totals_.constraint_mask_seconds_total += seconds;
}

void SchedulerMetrics::RecordConstraintMaskSkip() {
  base::MutexLock lock(mu_);
  ++totals_.constraint_mask_skipped_steps;
}

void SchedulerMetrics::RecordSpeculation(int32_t drafted, int32_t accepted) {
  base::MutexLock lock(mu_);
  ++totals_.spec_decode_drafts;
  totals_.spec_decode_draft_tokens += static_cast<uint64_t>(drafted);
  totals_.spec_decode_accepted_tokens += static_cast<uint64_t>(accepted);
  std::vector<uint64_t>& per_position = totals_.spec_decode_accepted_per_position;
  if (std::ssize(per_position) < drafted) per_position.resize(static_cast<size_t>(drafted));
  for (int32_t position = 0; position < accepted; ++position) ++per_position[position];
}

MetricsSnapshot SchedulerMetrics::Snapshot() const {
  base::MutexLock lock(mu_);
  MetricsSnapshot snapshot = totals_;
  snapshot.tokens_per_step = tokens_per_step_.snapshot();
  snapshot.step_seconds = step_seconds_.snapshot();
  snapshot.queue_seconds = queue_seconds_.snapshot();
  snapshot.time_to_first_token_seconds = ttft_seconds_.snapshot();
  snapshot.inter_token_seconds = itl_seconds_.snapshot();
  snapshot.e2e_request_seconds = e2e_seconds_.snapshot();
  return snapshot;
}

}  // namespace kvd::scheduler
