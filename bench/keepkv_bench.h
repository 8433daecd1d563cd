// What KeepKV costs in accuracy and buys in memory: on a long prompt the model writes itself
// (in-distribution text), the perturbation of the next-token logits over the decode steps that
// follow a compaction, per merge method and budget, against the same sequence with its full
// cache; a one-at-a-time sweep of the open parameters; and decode throughput and KV memory of
// a batch with a 10% budget against none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cache_store/keepkv/keepkv_params.h"
#include "engine/model.h"
#include "text/tokenizer.h"

namespace kvd::bench {

struct KeepKvBenchOptions {
  int32_t prompt_tokens = 1024;  // sampled from the model after its chat prefix
  int32_t follow_steps = 32;     // teacher-forced decode steps after the compaction
  int32_t prompts = 4;           // prompts averaged over
  std::vector<double> budgets = {0.5, 0.2, 0.1};
  // The batch of the throughput comparison.
  int32_t batch_sequences = 16;
  int32_t batch_prompt_tokens = 1024;
  int32_t batch_decode_tokens = 64;
  size_t batch_kv_cache_bytes = size_t{1} << 30;
  uint64_t seed = 1;
};

// Over the follow steps and prompts: relative L2 change of the logits, KL(full || bounded) of
// the next-token distributions, and how often the greedy token agrees.
struct Perturbation {
  double first_step = 0.0;    // relative logit change at the first step after the compaction
  double mean = 0.0;          // ... averaged over all follow steps
  double last_quarter = 0.0;  // ... over the last quarter of them
  double kl = 0.0;
  double top1_agreement = 0.0;
  int64_t merges = 0;
  int64_t evictions = 0;
  int64_t fallbacks = 0;  // merges whose exact rule fell back to the weighted mean
};

struct PerturbationRow {
  std::string label;  // the method, or the parameter varied
  double budget = 0.0;
  Perturbation result;
};

struct BatchResult {
  bool keepkv = false;
  double decode_tokens_per_second = 0.0;  // over steps that only decode
  int32_t peak_kv_blocks = 0;             // blocks in use at the fullest step
  double compressed_fraction = 0.0;       // of the own entries, at the end of the prompts
};

struct KeepKvBenchResult {
  std::vector<PerturbationRow> methods;  // every method at every budget, default parameters
  std::vector<PerturbationRow> sweep;    // the defaults at budgets 0.2 and 0.1, one change each
  std::vector<BatchResult> batch;        // no budget, then budget 0.1
};

// Everything runs on the calling thread; the batch through a Scheduler stepped there.
[[nodiscard]] absl::StatusOr<KeepKvBenchResult> MeasureKeepKv(engine::Model& model,
                                                              const text::Tokenizer& tokenizer,
                                                              const KeepKvBenchOptions& options);

// The throughput comparison alone: the batch's decode throughput, KV peak and compressed
// fraction with a 10% budget (`keepkv`) or none. With a tokenizer each prompt opens with a user
// turn, without one (a model that has none) it is random letters' byte ids throughout.
[[nodiscard]] absl::StatusOr<BatchResult> MeasureKeepKvBatch(engine::Model& model,
                                                             const text::Tokenizer* tokenizer,
                                                             const KeepKvBenchOptions& options,
                                                             bool keepkv);

}  // namespace kvd::bench
