// The scheduler's metrics as Prometheus families, built from a fresh MetricsSnapshot at each
// scrape: vLLM's names, types, labels and bucket edges (so dashboards and autoscalers made for
// vLLM read kvd unchanged), plus kvd_ families for what vLLM lacks.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "scheduler/metrics.h"
#include "server/metrics/tenant_labels.h"

namespace kvd::server {

// Families (every one labelled model_name; the vllm: ones also engine="0", as vLLM V1 does):
//   vllm:num_requests_running        gauge      sequences in the running batch
//   vllm:num_requests_waiting        gauge      sequences waiting for admission (new or preempted)
//   vllm:kv_cache_usage_perc         gauge      fraction of KV blocks in use, 0..1
//   vllm:gpu_cache_usage_perc        gauge      the same; vLLM's older name
//   vllm:num_preemptions_total       counter    sequences preempted
//   vllm:prompt_tokens_total         counter    prompt tokens of admitted requests
//   vllm:generation_tokens_total     counter    sampled tokens
//   vllm:request_success_total       counter    finished sequences,
//   {finished_reason=stop|length|abort} vllm:iteration_tokens_total      histogram  tokens through
//   the model per step (non-empty steps) vllm:time_to_first_token_seconds histogram submit to first
//   token, seconds vllm:inter_token_latency_seconds histogram between tokens of a sequence, seconds
//   vllm:time_per_output_token_seconds  histogram  the same data; vLLM's older name
//   vllm:e2e_request_latency_seconds histogram  submit to final event, seconds
//   vllm:request_queue_time_seconds  histogram  submit to first admission, seconds
//   kvd_tenant_requests_running      gauge      {tenant} sequences in the batch
//   kvd_tenant_requests_waiting      gauge      {tenant} sequences waiting for admission
//   kvd_tenant_prompt_tokens_total   counter    {tenant} prompt tokens admitted
//   kvd_tenant_generation_tokens_total  counter {tenant} tokens generated
//   kvd_kv_cache_blocks              gauge      {state=free|used} KV cache blocks
//   kvd_scheduler_steps_total        counter    scheduler steps
//   kvd_scheduler_step_seconds       histogram  duration of non-empty steps, seconds
//   kvd_scheduler_step_seconds_total counter    time spent in steps, seconds
//   kvd_scheduler_forward_seconds_total  counter  the part of step time in the forward pass,
//   seconds kvd_scheduler_computed_tokens_total  counter  tokens through the model, recomputation
//   included
class SchedulerCollector : public prometheus::Collectable {
 public:
  // `snapshot` is called once per Collect, from the scraping thread; it must be thread-safe.
  SchedulerCollector(std::string model_name, TenantLabels tenants,
                     std::function<scheduler::MetricsSnapshot()> snapshot);

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::vector<prometheus::ClientMetric::Label> vllm_labels_;  // model_name, engine
  std::vector<prometheus::ClientMetric::Label> kvd_labels_;   // model_name
  TenantLabels tenants_;
  std::function<scheduler::MetricsSnapshot()> snapshot_;
};

}  // namespace kvd::server
