#include "server/metrics/scheduler_collector.h"

#include <map>
#include <string>
#include <utility>

#include "server/metrics/metric_families.h"

namespace kvd::server {

using metric_families::AddValue;
using metric_families::Family;
using metric_families::Histogram;
using metric_families::Labels;
using metric_families::Single;
using metric_families::With;
using prometheus::MetricFamily;
using prometheus::MetricType;

SchedulerCollector::SchedulerCollector(std::string model_name, TenantLabels tenants,
                                       std::function<scheduler::MetricsSnapshot()> snapshot)
    : vllm_labels_{{"model_name", model_name}, {"engine", "0"}},
      kvd_labels_{{"model_name", model_name}},
      tenants_(std::move(tenants)),
      snapshot_(std::move(snapshot)) {}

std::vector<MetricFamily> SchedulerCollector::Collect() const {
  const scheduler::MetricsSnapshot s = snapshot_();
  std::vector<MetricFamily> out;
  const auto gauge = MetricType::Gauge;
  const auto counter = MetricType::Counter;

  // vLLM's families.
  out.push_back(Single("vllm:num_requests_running",
                       "Number of sequences in the running batch (sequences).", gauge, vllm_labels_,
                       s.num_running));
  out.push_back(Single("vllm:num_requests_waiting",
                       "Number of sequences waiting for admission, new or preempted (sequences).",
                       gauge, vllm_labels_, s.num_waiting));
  out.push_back(Single("vllm:kv_cache_usage_perc",
                       "Fraction of KV cache blocks in use (ratio, 1 means 100 percent).", gauge,
                       vllm_labels_, s.kv_usage));
  out.push_back(Single("vllm:gpu_cache_usage_perc",
                       "Fraction of KV cache blocks in use (ratio, 1 means 100 percent); older "
                       "name of vllm:kv_cache_usage_perc.",
                       gauge, vllm_labels_, s.kv_usage));
  out.push_back(Single("vllm:num_preemptions_total",
                       "Cumulative number of sequence preemptions (sequences).", counter,
                       vllm_labels_, static_cast<double>(s.preemptions)));
  out.push_back(Single("vllm:prompt_tokens_total",
                       "Prompt tokens of admitted requests, counted once per request (tokens).",
                       counter, vllm_labels_, static_cast<double>(s.prompt_tokens)));
  out.push_back(Single("vllm:generation_tokens_total", "Sampled tokens (tokens).", counter,
                       vllm_labels_, static_cast<double>(s.generation_tokens)));
  out.push_back(Single("vllm:prefix_cache_queries_total",
                       "Prompt tokens looked up in the prefix cache, once per request (tokens).",
                       counter, vllm_labels_, static_cast<double>(s.prefix_cache_queries)));
  out.push_back(Single("vllm:prefix_cache_hits_total",
                       "Prompt tokens found in the prefix cache, not computed (tokens).", counter,
                       vllm_labels_, static_cast<double>(s.prefix_cache_hits)));
  MetricFamily success = Family(
      "vllm:request_success_total",
      "Finished sequences (each of a request's n completions), by finish reason (sequences).",
      counter);
  for (auto reason : {scheduler::FinishReason::kStop, scheduler::FinishReason::kLength,
                      scheduler::FinishReason::kAbort}) {
    const auto it = s.finished_sequences.find(reason);
    AddValue(
        success,
        With(vllm_labels_, "finished_reason", std::string(scheduler::FinishReasonName(reason))),
        it == s.finished_sequences.end() ? 0.0 : static_cast<double>(it->second));
  }
  out.push_back(std::move(success));
  out.push_back(Single("vllm:spec_decode_num_drafts_total",
                       "Speculative decoding: sequence steps that verified drafts (steps).",
                       counter, vllm_labels_, static_cast<double>(s.spec_decode_drafts)));
  out.push_back(Single("vllm:spec_decode_num_draft_tokens_total",
                       "Speculative decoding: draft tokens verified (tokens).", counter,
                       vllm_labels_, static_cast<double>(s.spec_decode_draft_tokens)));
  out.push_back(Single("vllm:spec_decode_num_accepted_tokens_total",
                       "Speculative decoding: draft tokens kept (tokens).", counter, vllm_labels_,
                       static_cast<double>(s.spec_decode_accepted_tokens)));
  MetricFamily per_position = Family(
      "vllm:spec_decode_num_accepted_tokens_per_pos_total",
      "Speculative decoding: draft tokens kept, by position in their draft (tokens).", counter);
  for (size_t position = 0; position < s.spec_decode_accepted_per_position.size(); ++position) {
    AddValue(per_position, With(vllm_labels_, "position", std::to_string(position)),
             static_cast<double>(s.spec_decode_accepted_per_position[position]));
  }
  out.push_back(std::move(per_position));
  out.push_back(Histogram("vllm:iteration_tokens_total",
                          "Tokens through the model per non-empty scheduler step (tokens).",
                          vllm_labels_, s.tokens_per_step));
  out.push_back(Histogram("vllm:time_to_first_token_seconds",
                          "Time from request submission to its first token (seconds).",
                          vllm_labels_, s.time_to_first_token_seconds));
  out.push_back(Histogram("vllm:inter_token_latency_seconds",
                          "Time between consecutive tokens of a sequence (seconds).", vllm_labels_,
                          s.inter_token_seconds));
  out.push_back(Histogram("vllm:time_per_output_token_seconds",
                          "Time between consecutive tokens of a sequence (seconds); older name of "
                          "vllm:inter_token_latency_seconds.",
                          vllm_labels_, s.inter_token_seconds));
  out.push_back(Histogram("vllm:e2e_request_latency_seconds",
                          "Time from request submission to its final event (seconds).",
                          vllm_labels_, s.e2e_request_seconds));
  out.push_back(Histogram("vllm:request_queue_time_seconds",
                          "Time from request submission to its first admission (seconds).",
                          vllm_labels_, s.queue_seconds));

  // Per tenant, ids outside the configured ones summed under "other".
  std::map<std::string, scheduler::TenantStats> tenants;
  for (const std::string& tenant : tenants_.values()) tenants[tenant];
  for (const auto& [id, stats] : s.tenants) {
    scheduler::TenantStats& total = tenants[tenants_.Of(id)];
    total.running += stats.running;
    total.waiting += stats.waiting;
    total.prompt_tokens += stats.prompt_tokens;
    total.generation_tokens += stats.generation_tokens;
    total.prefix_cache_queries += stats.prefix_cache_queries;
    total.prefix_cache_hits += stats.prefix_cache_hits;
  }
  MetricFamily running = Family("kvd_tenant_requests_running",
                                "Sequences of the tenant in the running batch (sequences).", gauge);
  MetricFamily waiting =
      Family("kvd_tenant_requests_waiting",
             "Sequences of the tenant waiting for admission, new or preempted (sequences).", gauge);
  MetricFamily prompt =
      Family("kvd_tenant_prompt_tokens_total",
             "Prompt tokens of the tenant's admitted requests (tokens).", counter);
  MetricFamily generation = Family("kvd_tenant_generation_tokens_total",
                                   "Tokens sampled for the tenant (tokens).", counter);
  MetricFamily prefix_queries =
      Family("kvd_tenant_prefix_cache_queries_total",
             "Prompt tokens of the tenant looked up in the prefix cache (tokens).", counter);
  MetricFamily prefix_hits =
      Family("kvd_tenant_prefix_cache_hits_total",
             "Prompt tokens of the tenant found in the prefix cache (tokens).", counter);
  for (const auto& [tenant, stats] : tenants) {
    const Labels labels = With(kvd_labels_, "tenant", tenant);
    AddValue(running, labels, stats.running);
    AddValue(waiting, labels, stats.waiting);
    AddValue(prompt, labels, static_cast<double>(stats.prompt_tokens));
    AddValue(generation, labels, static_cast<double>(stats.generation_tokens));
    AddValue(prefix_queries, labels, static_cast<double>(stats.prefix_cache_queries));
    AddValue(prefix_hits, labels, static_cast<double>(stats.prefix_cache_hits));
  }
  out.push_back(std::move(running));
  out.push_back(std::move(waiting));
  out.push_back(std::move(prompt));
  out.push_back(std::move(generation));
  out.push_back(std::move(prefix_queries));
  out.push_back(std::move(prefix_hits));

  // kvd's scheduler and KV cache.
  MetricFamily blocks = Family("kvd_kv_cache_blocks", "KV cache blocks by state (blocks).", gauge);
  AddValue(blocks, With(kvd_labels_, "state", "free"), s.kv_blocks_free);
  AddValue(blocks, With(kvd_labels_, "state", "used"), s.kv_blocks_total - s.kv_blocks_free);
  out.push_back(std::move(blocks));
  out.push_back(Single("kvd_prefix_cache_blocks",
                       "KV cache blocks the prefix cache keeps, held by sequences or idle; idle "
                       "ones count as free in kvd_kv_cache_blocks (blocks).",
                       gauge, kvd_labels_, static_cast<double>(s.prefix_cache_blocks)));
  out.push_back(Single("kvd_scheduler_steps_total", "Scheduler steps, empty ones included (steps).",
                       counter, kvd_labels_, static_cast<double>(s.steps)));
  out.push_back(Single("kvd_scheduler_stalled_seconds",
                       "How long the scheduler thread has had work without completing a step; "
                       "0 while idle (seconds).",
                       gauge, kvd_labels_, s.stalled_seconds));
  out.push_back(Histogram("kvd_scheduler_step_seconds",
                          "Duration of scheduler steps that ran the model (seconds).", kvd_labels_,
                          s.step_seconds));
  out.push_back(Single("kvd_scheduler_step_seconds_total",
                       "Time spent in scheduler steps, empty ones included (seconds).", counter,
                       kvd_labels_, s.step_seconds_total));
  out.push_back(Single("kvd_scheduler_forward_seconds_total",
                       "Part of the scheduler step time spent in the model's forward pass "
                       "(seconds).",
                       counter, kvd_labels_, s.forward_seconds_total));
  out.push_back(Single("kvd_scheduler_computed_tokens_total",
                       "Tokens through the model, recomputation after preemption included "
                       "(tokens).",
                       counter, kvd_labels_, static_cast<double>(s.computed_tokens)));

  // KeepKV.
  out.push_back(Single("kvd_keepkv_merges_total",
                       "KV entries KeepKV merged into another entry (entries, per layer and kv "
                       "head).",
                       counter, kvd_labels_, static_cast<double>(s.keepkv_merges)));
  out.push_back(Single("kvd_keepkv_evictions_total",
                       "KV entries KeepKV dropped for want of a similar partner (entries, per "
                       "layer and kv head).",
                       counter, kvd_labels_, static_cast<double>(s.keepkv_evictions)));
  out.push_back(Single("kvd_keepkv_refreshes_total",
                       "Rebuilds of a KeepKV sequence from its full KV (refreshes).", counter,
                       kvd_labels_, static_cast<double>(s.keepkv_refreshes)));
  out.push_back(Single("kvd_keepkv_sequences", "Running sequences under a KV budget (sequences).",
                       gauge, kvd_labels_, s.keepkv_sequences));
  out.push_back(Single("kvd_keepkv_compressed_fraction",
                       "Fraction of the own tokens of running KeepKV sequences whose entries were "
                       "merged or evicted away (ratio).",
                       gauge, kvd_labels_, s.keepkv_compressed_fraction));

  // Structured outputs.
  out.push_back(Single("kvd_structured_output_requests_total",
                       "Requests whose output a structured-output constraint held (requests).",
                       counter, kvd_labels_, static_cast<double>(s.constrained_requests)));
  out.push_back(Single("kvd_structured_output_mask_seconds_total",
                       "Constraint workers' time spent building constrained sequences' token "
                       "masks and advancing them through their constraints (seconds).",
                       counter, kvd_labels_, s.constraint_mask_seconds_total));
  out.push_back(Single("kvd_structured_output_skipped_steps_total",
                       "Steps a constrained sequence sat out because its next token mask was not "
                       "ready when the step began (sequence-steps).",
                       counter, kvd_labels_, static_cast<double>(s.constraint_mask_skipped_steps)));
  return out;
}

}  // namespace kvd::server
