// What the scheduler measures, for the server to export: gauges, counters and latency
// histograms (bucket bounds as vLLM's Prometheus metrics use them). The scheduler thread records;
// any thread may take a snapshot.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/histogram.h"
#include "base/mutex.h"
#include "scheduler/request.h"

namespace kvd::scheduler {

struct TenantStats {
  int32_t running = 0;             // sequences in the batch
  int32_t waiting = 0;             // sequences waiting for admission (new or preempted)
  uint64_t prompt_tokens = 0;      // prompt tokens of its finished and running requests
  uint64_t generation_tokens = 0;  // tokens generated for it
  uint64_t prefix_cache_queries = 0;  // prompt tokens looked up in the prefix cache
  uint64_t prefix_cache_hits = 0;     // of those, the tokens found (not computed)
};

struct MetricsSnapshot {
  // Gauges, as of the last step.
  int32_t num_running = 0;
  int32_t num_waiting = 0;
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_free = 0;
  double kv_usage = 0.0;  // fraction of KV blocks in use
  std::map<std::string, TenantStats> tenants;
  // KeepKV sequences running, and the fraction of their own tokens' entries merged or evicted
  // away (1 - entries kept / tokens, over all of them; 0 with none).
  int32_t keepkv_sequences = 0;
  double keepkv_compressed_fraction = 0.0;
  int64_t prefix_cache_blocks = 0;  // KV blocks the prefix cache keeps (in use or idle)
  // How long the scheduler thread has had work without completing a step (Scheduler::StalledFor).
  double stalled_seconds = 0.0;
  // Counters.
  uint64_t steps = 0;
  uint64_t preemptions = 0;
  uint64_t prompt_tokens = 0;      // prompt tokens of admitted requests (once per request)
  uint64_t generation_tokens = 0;  // sampled tokens
  uint64_t computed_tokens = 0;    // tokens through the model, recomputation included
  std::map<FinishReason, uint64_t> finished_sequences;
  double step_seconds_total = 0.0;
  double forward_seconds_total = 0.0;  // the part of step time spent in the forward pass
  uint64_t keepkv_merges = 0;          // KV entries KeepKV folded into another
  uint64_t keepkv_evictions = 0;       // KV entries KeepKV dropped (no similar partner)
  uint64_t keepkv_refreshes = 0;       // rebuilds of a sequence from its full KV
  // Prompt tokens looked up in the prefix cache (each request once, at admission), and of
  // those the tokens found there.
  uint64_t prefix_cache_queries = 0;
  uint64_t prefix_cache_hits = 0;
  // Requests under a structured-output constraint; the time constraint workers spent building
  // their sequences' token masks and advancing them through their constraints; and the steps a
  // sequence sat out because its next mask was not ready when the step began (one per sequence
  // and step).
  uint64_t constrained_requests = 0;
  double constraint_mask_seconds_total = 0.0;
  uint64_t constraint_mask_skipped_steps = 0;
  // Speculative decoding: steps in which a sequence verified drafts, the draft tokens, the
  // accepted ones, and the accepted ones by position in their draft (0 first).
  uint64_t spec_decode_drafts = 0;
  uint64_t spec_decode_draft_tokens = 0;
  uint64_t spec_decode_accepted_tokens = 0;
  std::vector<uint64_t> spec_decode_accepted_per_position;
  // Histograms.
  base::HistogramSnapshot tokens_per_step;
  base::HistogramSnapshot step_seconds;
  base::HistogramSnapshot queue_seconds;                // submit to first admission
  base::HistogramSnapshot time_to_first_token_seconds;  // submit to first token
  base::HistogramSnapshot inter_token_seconds;          // between tokens of a sequence
  base::HistogramSnapshot e2e_request_seconds;          // submit to final event
};

// Thread-safe accumulator behind MetricsSnapshot.
class SchedulerMetrics {
 public:
  SchedulerMetrics();

  // The state after a step (or after requests ended outside one).
  struct Gauges {
    int32_t num_running = 0;
    int32_t num_waiting = 0;
    int32_t kv_blocks_total = 0;
    int32_t kv_blocks_free = 0;
    std::map<std::string, TenantStats> tenants;  // running and waiting only
    int32_t keepkv_sequences = 0;
    double keepkv_compressed_fraction = 0.0;
    int64_t prefix_cache_blocks = 0;
  };
  void RecordGauges(const Gauges& gauges);
  void RecordStep(int32_t tokens, int32_t preemptions, double step_seconds, double forward_seconds);
  void RecordAdmission(const std::string& tenant, int32_t prompt_tokens, double queue_seconds);
  // A sampled token; `time_to_first_token` is set on a request's first token, otherwise
  // `inter_token` on a sequence's later ones.
  void RecordToken(const std::string& tenant, std::optional<double> time_to_first_token,
                   std::optional<double> inter_token);
  void RecordFinish(FinishReason reason);
  void RecordKeepKv(int64_t merges, int64_t evictions, int64_t refreshes);
  // A request's prefix cache lookup: `queried` prompt tokens, `hits` of them found.
  void RecordPrefixCache(const std::string& tenant, int32_t queried, int32_t hits);
  void RecordRequestDone(double e2e_seconds);
  void RecordConstrainedRequest();
  void RecordConstraintMask(double seconds);
  void RecordConstraintMaskSkip();
  // A sequence's drafts of one step: `drafted` tokens, of which the first `accepted` were kept.
  void RecordSpeculation(int32_t drafted, int32_t accepted);

  MetricsSnapshot Snapshot() const;

 private:
  mutable base::Mutex mu_;
  MetricsSnapshot totals_ ABSL_GUARDED_BY(mu_);  // histograms kept below
  base::Histogram tokens_per_step_ ABSL_GUARDED_BY(mu_);
  base::Histogram step_seconds_ ABSL_GUARDED_BY(mu_);
  base::Histogram queue_seconds_ ABSL_GUARDED_BY(mu_);
  base::Histogram ttft_seconds_ ABSL_GUARDED_BY(mu_);
  base::Histogram itl_seconds_ ABSL_GUARDED_BY(mu_);
  base::Histogram e2e_seconds_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvd::scheduler
